// Retention: deletes finished events older than EVENT_RETENTION_DAYS, in batches. Used by the
// daily `prune_events` cron task and `npm run prune`.
//
// Never fewer than 31 days: Stripe resends events for up to 30 days (the Dashboard for 15, the
// CLI for 30) and keeps them listable for 30, so a younger row may still be asked about. Even past
// that, a pruned event delivered again grants nothing: grants are keyed by order.
//
// Defaults: batches of 1,000 rows, each its own short transaction (no long lock on the table),
// until a batch comes back short.
import type { Kysely } from 'kysely';
import { recordMaintenanceRun } from '../db/maintenance-runs.js';
import type { Database } from '../db/schema.js';
import { deleteSpentJobs } from '../events/enqueue.js';
import { pruneFinishedEvents } from '../events/event-store.js';
import type { Logger } from '../logger.js';

export const MIN_RETENTION_DAYS = 31;
const DAY_MS = 86_400_000;

export interface PruneOptions {
  retentionDays: number;
  batchSize?: number;
  logger?: Logger;
}

export interface PruneResult {
  deleted: number;
  batches: number;
  /** Fulfilment jobs out of attempts, which could never run again (their events are 'failed' rows). */
  deleted_jobs: number;
  finished_before: string;
}

export async function pruneEvents(db: Kysely<Database>, options: PruneOptions): Promise<PruneResult> {
  if (!Number.isInteger(options.retentionDays) || options.retentionDays < MIN_RETENTION_DAYS) {
    throw new RangeError(`retention must be at least ${MIN_RETENTION_DAYS} days: Stripe resends events for up to 30 days`);
  }
  const batchSize = options.batchSize ?? 1_000;
  const finishedBefore = new Date(Date.now() - options.retentionDays * DAY_MS);
  const result: PruneResult = { deleted: 0, batches: 0, deleted_jobs: 0, finished_before: finishedBefore.toISOString() };
  for (;;) {
    const deleted = await pruneFinishedEvents(db, { finishedBefore, limit: batchSize });
    result.deleted += deleted;
    result.batches++;
    if (deleted < batchSize) break;
  }
  result.deleted_jobs = await deleteSpentJobs(db);
  await recordMaintenanceRun(db, 'prune', { deleted: result.deleted, batches: result.batches, deleted_jobs: result.deleted_jobs });
  if (result.deleted > 0) options.logger?.info({ deleted: result.deleted, batches: result.batches, finishedBefore }, 'pruned finished events');
  return result;
}
