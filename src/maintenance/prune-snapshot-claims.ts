// Prune of snapshot_claims (sql/0024), with the events' cutoff: a sibling arriving later is
// claimed anew, and the business keys make it a duplicate (docs/design.md, invariant 5).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { deleteInBatches } from './batched-delete.js';

/** Deletes the claims made before `before`, in batches. */
export async function pruneSnapshotClaims(
  db: Kysely<Database>,
  { before, batchSize }: { before: Date; batchSize: number },
): Promise<{ deleted: number; batches: number }> {
  return deleteInBatches(db, batchSize, { table: 'snapshot_claims', key: 'snapshot_event_id', where: sql<boolean>`claimed_at < ${before}` });
}
