// Retention: deletes finished events older than EVENT_RETENTION_DAYS, in batches, the API's
// Idempotency-Keys registered before then that no module counts, and the outcome notifications
// written before then that every endpoint took. Used by the daily `prune_events` cron task and
// `npm run prune`.
//
// Never fewer than 31 days: Stripe resends events for up to 30 days (the Dashboard for 15, the
// CLI for 30) and keeps them listable for 30, so a younger row may still be asked about. Even past
// that, a pruned event delivered again grants nothing: grants are keyed by order.
//
// Its defaults, worker task and schedule, statements and loops are all here.
import type { Task } from 'graphile-worker';
import { sql, type Kysely } from 'kysely';
import { recordMaintenanceRun } from '../db/maintenance-runs.js';
import type { Database } from '../db/schema.js';
import { pruneDeliveredNotifications } from '../notifications/retention.js';
import { deleteSpentJobs } from '../worker/job-queue.js';
import type { Logger } from '../logger.js';

export const MIN_RETENTION_DAYS = 31;
/** A century: a cutoff further back would leave Postgres' range of dates, and delete nothing more. */
export const MAX_RETENTION_DAYS = 36_500;
/** Rows per statement, each its own short transaction (no long lock on the table), until a batch comes back short. */
const PRUNE_BATCH_ROWS = 1_000;
const DAY_MS = 86_400_000;
/** graphile-worker's identifier for the prune task: stored in every queued job, so it stays. */
const PRUNE_TASK = 'prune_events';

/**
 * Prune as the worker runs it (src/run-worker.ts): task `prune_events` on the crontab,
 * daily at 03:17, off the hour (many crontabs fire at :00), three attempts a day. The crontab
 * guarantees one run per tick across all worker containers.
 */
export const pruneTask = {
  identifier: PRUNE_TASK,
  crontab: () => `17 3 * * * ${PRUNE_TASK} ?max=3`,
  task:
    ({ db, logger, config }: PruneTaskDeps): Task =>
    async () => {
      await pruneEvents(db, { retentionDays: config.eventRetentionDays, logger });
    },
};

interface PruneTaskDeps {
  /** The worker pool. */
  db: Kysely<Database>;
  logger: Logger;
  config: { eventRetentionDays: number };
}

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
  /**
   * The API's Idempotency-Keys registered before the same cutoff and counted by no module: a
   * retry with one of those keys is a new request (src/http/idempotent-request.ts).
   */
  deleted_keys: number;
  /** Outcome notifications delivered to every endpoint, written before the same cutoff. */
  deleted_notifications: number;
  finished_before: string;
}

export async function pruneEvents(db: Kysely<Database>, options: PruneOptions): Promise<PruneResult> {
  if (!Number.isInteger(options.retentionDays) || options.retentionDays < MIN_RETENTION_DAYS || options.retentionDays > MAX_RETENTION_DAYS) {
    throw new RangeError(`retention must be at least ${MIN_RETENTION_DAYS} days (Stripe resends events for up to 30 days) and at most ${MAX_RETENTION_DAYS}`);
  }
  const batchSize = options.batchSize ?? PRUNE_BATCH_ROWS;
  const finishedBefore = new Date(Date.now() - options.retentionDays * DAY_MS);
  const { deleted, batches } = await inBatches(batchSize, (limit) => pruneFinishedEvents(db, { finishedBefore, limit }));
  await inBatches(batchSize, (limit) => pruneSnapshotClaims(db, { claimedBefore: finishedBefore, limit }));
  const deleted_jobs = await deleteSpentJobs(db);
  const { deleted: deleted_keys } = await inBatches(batchSize, (limit) => pruneIdempotencyKeys(db, { createdBefore: finishedBefore, limit }));
  const { deleted: deleted_notifications } = await inBatches(batchSize, (limit) => pruneDeliveredNotifications(db, { createdBefore: finishedBefore, limit }));
  await recordMaintenanceRun(db, 'prune', { deleted, batches, deleted_jobs, deleted_keys, deleted_notifications });
  if (deleted > 0 || deleted_keys > 0 || deleted_notifications > 0) {
    options.logger?.info({ deleted, batches, deletedKeys: deleted_keys, deletedNotifications: deleted_notifications, finishedBefore }, 'pruned finished events');
  }
  return { deleted, batches, deleted_jobs, deleted_keys, deleted_notifications, finished_before: finishedBefore.toISOString() };
}

/** Runs `deleteBatch` (rows deleted, at most `limit`) until a batch comes back short. */
async function inBatches(limit: number, deleteBatch: (limit: number) => Promise<number>): Promise<{ deleted: number; batches: number }> {
  let deleted = 0;
  for (let batches = 1; ; batches++) {
    const batch = await deleteBatch(limit);
    deleted += batch;
    if (batch < limit) return { deleted, batches };
  }
}

/**
 * Deletes finished events that finished before `finishedBefore`, one batch. 'processing' and
 * 'failed' rows are never pruned: the first are work in flight, the second wait for ops. Safe
 * for business idempotency: grants are keyed by order, so a pruned event delivered again is
 * claimed anew and ends 'duplicate' (docs/design.md, invariant 5). Returns the rows deleted.
 */
async function pruneFinishedEvents(db: Kysely<Database>, options: { finishedBefore: Date; limit: number }): Promise<number> {
  // SKIP LOCKED: a replay or a late job holding a row keeps it; the next run gets it.
  const { numDeletedRows } = await db
    .deleteFrom('stripe_events')
    .where('event_id', 'in', (qb) =>
      qb
        .selectFrom('stripe_events')
        .select('event_id')
        .where('status', 'in', ['processed', 'ignored', 'duplicate'])
        .where('finished_at', '<', options.finishedBefore)
        .limit(options.limit)
        .forUpdate()
        .skipLocked(),
    )
    .executeTakeFirst();
  return Number(numDeletedRows);
}

/**
 * Deletes one batch of snapshot_claims (sql/0024) older than the events kept: a sibling arriving
 * later is claimed anew, and the business keys make it a duplicate (docs/design.md, invariant 5).
 */
async function pruneSnapshotClaims(db: Kysely<Database>, options: { claimedBefore: Date; limit: number }): Promise<number> {
  const { numDeletedRows } = await db
    .deleteFrom('snapshot_claims')
    .where('snapshot_event_id', 'in', (qb) =>
      qb.selectFrom('snapshot_claims').select('snapshot_event_id').where('claimed_at', '<', options.claimedBefore).limit(options.limit).forUpdate().skipLocked(),
    )
    .executeTakeFirst();
  return Number(numDeletedRows);
}

/**
 * Deletes one batch of the API's Idempotency-Keys (src/http/idempotent-request.ts) registered
 * before `createdBefore` that no module counts and no request holds (a lease still running).
 * Returns the keys deleted.
 */
async function pruneIdempotencyKeys(db: Kysely<Database>, options: { createdBefore: Date; limit: number }): Promise<number> {
  const { numDeletedRows } = await db
    .deleteFrom('api_idempotency_keys')
    .where('idempotency_key', 'in', (qb) =>
      qb
        .selectFrom('api_idempotency_keys')
        .select('idempotency_key')
        .where(sql<boolean>`not counted`)
        .where('created_at', '<', options.createdBefore)
        .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<=', sql<Date>`now()`)]))
        .limit(options.limit)
        .forUpdate()
        .skipLocked(),
    )
    .executeTakeFirst();
  return Number(numDeletedRows);
}
