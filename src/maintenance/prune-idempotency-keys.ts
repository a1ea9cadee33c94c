// Prune of the API's Idempotency-Keys (src/http/idempotent-request.ts), with the events' cutoff:
// a retry with a pruned key is a new request. A key some module counts stays, and so does one a
// request still holds (its lease running).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { deleteInBatches } from './batched-delete.js';

/** Deletes the keys registered before `before` that no module counts and no request holds, in batches. */
export async function pruneIdempotencyKeys(
  db: Kysely<Database>,
  { before, batchSize }: { before: Date; batchSize: number },
): Promise<{ deleted: number; batches: number }> {
  return deleteInBatches(db, batchSize, {
    table: 'api_idempotency_keys',
    key: 'idempotency_key',
    where: sql<boolean>`not counted and created_at < ${before} and (leased_until is null or leased_until <= now())`,
  });
}
