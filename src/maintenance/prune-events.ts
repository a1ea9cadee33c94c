// Prune of stripe_events: the finished rows past the retention (prune.ts says why never fewer
// than 31 days). 'processing' and 'failed' rows are never pruned: the first are work in flight,
// the second wait for ops. Safe for business idempotency: grants are keyed by order, so a pruned
// event delivered again is claimed anew and ends 'duplicate' (docs/design.md, invariant 5).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { deleteInBatches } from './batched-delete.js';

/** Deletes the events that finished before `before`, in batches. */
export async function pruneFinishedEvents(
  db: Kysely<Database>,
  { before, batchSize }: { before: Date; batchSize: number },
): Promise<{ deleted: number; batches: number }> {
  return deleteInBatches(db, batchSize, {
    table: 'stripe_events',
    key: 'event_id',
    where: sql<boolean>`status in ('processed', 'ignored', 'duplicate') and finished_at < ${before}`,
  });
}
