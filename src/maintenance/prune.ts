// Retention: once a day, deletes what is older than EVENT_RETENTION_DAYS, one table per file:
// finished events (prune-events.ts), snapshot claims (prune-snapshot-claims.ts), spent fulfilment
// jobs (prune-jobs.ts), the API's Idempotency-Keys (prune-idempotency-keys.ts) and delivered
// outcome notifications (prune-notifications.ts), and each module's own outbox rows (its
// `retention`: the usage module's sent reports). Used by the daily `prune_events` cron task
// (tasks/prune_events.ts) and `npm run prune`; one run, one cutoff, one record of what went.
//
// Never fewer than 31 days: Stripe resends events for up to 30 days (the Dashboard for 15, the
// CLI for 30) and keeps them listable for 30, so a younger row may still be asked about. Even past
// that, a pruned event delivered again grants nothing: grants are keyed by order.
import type { Kysely } from 'kysely';
import { recordMaintenanceRun } from '../db/maintenance-runs.js';
import type { Database } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { BusinessModule } from '../module-contract.js';
import type { MaintenanceService } from './maintenance-service.js';
import { pruneFinishedEvents } from './prune-events.js';
import { pruneIdempotencyKeys } from './prune-idempotency-keys.js';
import { pruneSpentJobs } from './prune-jobs.js';
import { pruneDeliveredNotifications } from './prune-notifications.js';
import { pruneSnapshotClaims } from './prune-snapshot-claims.js';

export const MIN_RETENTION_DAYS = 31;
/** A century: a cutoff further back would leave Postgres' range of dates, and delete nothing more. */
export const MAX_RETENTION_DAYS = 36_500;
/** Rows per statement, each its own short transaction (no long lock on the table), until a batch comes back short. */
const PRUNE_BATCH_ROWS = 1_000;
const DAY_MS = 86_400_000;
/** graphile-worker's identifier for the prune task: stored in every queued job, so it stays. */
const PRUNE_TASK = 'prune_events';

/**
 * Prune as the worker runs it: task `prune_events` on the crontab, daily at 03:17, off the hour
 * (many crontabs fire at :00), three attempts a day. The crontab guarantees one run per tick
 * across all worker containers.
 */
export const pruneService: MaintenanceService<'eventRetentionDays'> = {
  identifier: PRUNE_TASK,
  settings: ['eventRetentionDays'],
  crontab: () => `17 3 * * * ${PRUNE_TASK} ?max=3`,
};

export interface PruneOptions {
  retentionDays: number;
  batchSize?: number;
  logger?: Logger;
  /** Each runs its own retention with the same cutoff. */
  modules?: readonly Pick<BusinessModule, 'name' | 'retention'>[];
}

export interface PruneResult {
  deleted: number;
  batches: number;
  /** Fulfilment jobs out of attempts, which could never run again (their events are 'failed' rows). */
  deleted_jobs: number;
  /**
   * The API's Idempotency-Keys registered before the same cutoff and counted by no module: a
   * retry with one of those keys is a new request (src/http/idempotent-request.ts).
   */
  deleted_keys: number;
  /** Outcome notifications delivered to every endpoint, written before the same cutoff. */
  deleted_notifications: number;
  /** Rows each module's retention deleted, by module (those with a retention only). */
  deleted_by_module: Record<string, number>;
  finished_before: string;
}

export async function pruneEvents(db: Kysely<Database>, options: PruneOptions): Promise<PruneResult> {
  if (!Number.isInteger(options.retentionDays) || options.retentionDays < MIN_RETENTION_DAYS || options.retentionDays > MAX_RETENTION_DAYS) {
    throw new RangeError(`retention must be at least ${MIN_RETENTION_DAYS} days (Stripe resends events for up to 30 days) and at most ${MAX_RETENTION_DAYS}`);
  }
  const batchSize = options.batchSize ?? PRUNE_BATCH_ROWS;
  const finishedBefore = new Date(Date.now() - options.retentionDays * DAY_MS);
  const cutoff = { before: finishedBefore, batchSize };
  const { deleted, batches } = await pruneFinishedEvents(db, cutoff);
  await pruneSnapshotClaims(db, cutoff);
  const deleted_jobs = await pruneSpentJobs(db);
  const { deleted: deleted_keys } = await pruneIdempotencyKeys(db, cutoff);
  const { deleted: deleted_notifications } = await pruneDeliveredNotifications(db, cutoff);
  const deleted_by_module: Record<string, number> = {};
  for (const module of options.modules ?? []) if (module.retention) deleted_by_module[module.name] = await module.retention(db, cutoff);
  const moduleCounts = Object.fromEntries(Object.entries(deleted_by_module).map(([name, n]) => [`deleted_${name}_rows`, n]));
  await recordMaintenanceRun(db, 'prune', { deleted, batches, deleted_jobs, deleted_keys, deleted_notifications, ...moduleCounts });
  const byModule = Object.values(deleted_by_module).reduce((sum, n) => sum + n, 0);
  if (deleted > 0 || deleted_keys > 0 || deleted_notifications > 0 || byModule > 0) {
    options.logger?.info(
      { deleted, batches, deletedKeys: deleted_keys, deletedNotifications: deleted_notifications, deletedByModule: deleted_by_module, finishedBefore },
      'pruned finished events',
    );
  }
  return { deleted, batches, deleted_jobs, deleted_keys, deleted_notifications, deleted_by_module, finished_before: finishedBefore.toISOString() };
}
