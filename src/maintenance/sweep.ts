// The backstop sweep: re-enqueues 'processing' events whose worker died (kill -9, OOM, a
// container replaced mid-job), which graphile-worker itself would leave locked for 4 hours.
// Everything of it is here: its defaults, settings and schedule, the statement that decides what
// is stale, and the loop that runs it in batches; its task entry (tasks/sweep_stale_events.ts)
// only reads the job's payload. One function, three callers: the
// `sweep_stale_events` cron task (and the one-off job a failover queues), `npm run sweep` and
// POST /admin/api/sweep. Any number of sweeps may run at once.
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { recordMaintenanceRun } from '../db/maintenance-runs.js';
import type { Database, EventStatus } from '../db/schema.js';
import { addEventJobs, addJob, jobKeyPerRow, waitingJobs } from '../queue/job-queue.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { MaintenanceService } from './maintenance-service.js';

/** Rows per statement (per transaction): short locks, small jobs (each batch's jobs carry ≤ 25 events). */
const SWEEP_BATCH_ROWS = 100;
/** Rows a dry run looks at, at most: it changes nothing, so it cannot page. */
const DRY_RUN_ROWS = 10_000;
/** graphile-worker's identifier for the sweep's task: stored in every queued job, so it stays. */
const SWEEP_TASK = 'sweep_stale_events';

/**
 * The sweep as the worker runs it: task `sweep_stale_events` (tasks/sweep_stale_events.ts) on the
 * crontab every SWEEP_CRON tick, one attempt per tick, since a failed sweep is simply the next
 * tick's work. The crontab guarantees one run per tick across all worker containers; running more
 * would still be safe (SKIP LOCKED), just wasted.
 */
export const sweepService: MaintenanceService<'sweepCron' | 'staleAfterMs' | 'maxAttempts'> = {
  identifier: SWEEP_TASK,
  settings: ['sweepCron', 'staleAfterMs', 'maxAttempts'],
  crontab: ({ sweepCron }) => `${sweepCron} ${SWEEP_TASK} ?max=1`,
};

/**
 * Queues one sweep, `afterSeconds` from now, that takes as stale what was enqueued or fetched
 * before now: for when the caller knows that every worker holding a job right now has lost it.
 * A failover is that case (database-identity.ts): the jobs fetched from the old
 * leader are locked on the new one, and their workers' attempts to release them died with the old
 * leader's connections, so graphile-worker would leave them locked for 4 hours and the schedule's
 * sweep would wait STALE_AFTER_SECONDS. The delay lets a live worker that fetched a job just now
 * take its events' row locks first, which keeps it from being reclaimed; a job fetched before the
 * failover and still run by a live worker is reclaimed anyway if its rows are unlocked then, which
 * costs its events one attempt and a second, idle pass (fulfilment is idempotent). In the caller's
 * transaction; while one such sweep waits, another replaces it.
 */
export async function queueSweepSoon(tx: Transaction<Database>, { afterSeconds, reason }: { afterSeconds: number; reason: string }): Promise<void> {
  await addJob(tx, SWEEP_TASK, { staleAfterSeconds: afterSeconds }, { key: `${SWEEP_TASK}:${reason}`, maxAttempts: 3, inSeconds: afterSeconds });
}

export interface SweepOptions {
  staleAfterMs: number;
  maxAttempts: number;
  batchSize?: number;
  /** Most rows to take in this run; unlimited by default. */
  limit?: number;
  /** Report what would be reclaimed or marked failed, change nothing. */
  dryRun?: boolean;
  /** Logs a line only when the sweep did something. */
  logger?: Logger;
  metrics?: Pick<Metrics, 'sweepReclaims'>;
}

export interface SweepResult {
  reclaimed: number;
  failed: number;
  /** Waiting events whose wait gave up (src/events/event-waits.ts): run once more, to end. */
  waits_expired: number;
  batches: number;
  dry_run: boolean;
  event_ids: string[];
}

/**
 * Runs batches until one comes back short or `limit` rows were taken, then records the run
 * (maintenance_runs, metrics) and logs a line only if it reclaimed or failed something.
 */
export async function sweepStaleEvents(db: Kysely<Database>, options: SweepOptions): Promise<SweepResult> {
  const batchSize = options.batchSize ?? SWEEP_BATCH_ROWS;
  const result: SweepResult = { reclaimed: 0, failed: 0, waits_expired: 0, batches: 0, dry_run: options.dryRun ?? false, event_ids: [] };
  for (;;) {
    // A dry run changes nothing, so it cannot page: it looks at up to `limit` rows at once.
    const size = options.dryRun ? (options.limit ?? DRY_RUN_ROWS) : batchSize;
    const room = options.limit === undefined ? size : Math.min(size, options.limit - result.reclaimed - result.failed - result.waits_expired);
    if (room <= 0) break;
    const rows = await reclaimBatch(db, { ...options, limit: room });
    result.batches++;
    for (const row of rows) {
      result.event_ids.push(row.event_id);
      if (row.expired) result.waits_expired++;
      else if (row.status === 'failed') result.failed++;
      else result.reclaimed++;
    }
    // A short batch means nothing is left.
    if (options.dryRun || rows.length < room) break;
  }
  if (!result.dry_run) {
    await recordMaintenanceRun(db, 'sweep', {
      reclaimed: result.reclaimed,
      failed: result.failed,
      waits_expired: result.waits_expired,
      batches: result.batches,
    });
    options.metrics?.sweepReclaims.inc({ result: 'reclaimed' }, result.reclaimed);
    options.metrics?.sweepReclaims.inc({ result: 'failed' }, result.failed);
    if (result.reclaimed + result.failed > 0) {
      options.logger?.warn({ reclaimed: result.reclaimed, failed: result.failed, batches: result.batches }, 'sweep reclaimed abandoned events');
    }
    if (result.waits_expired > 0) options.logger?.info({ waitsExpired: result.waits_expired }, 'sweep ran waiting events whose wait gave up, to end them');
  }
  return result;
}

interface ReclaimOptions {
  maxAttempts: number;
  staleAfterMs: number;
  limit: number;
  /** Find and lock the candidates, change nothing. */
  dryRun?: boolean;
}

/**
 * One batch: the sweep's one statement (its own transaction). Takes 'processing' rows last enqueued
 * more than staleAfterMs ago, whose row lock no one holds, and whose job is not waiting to run:
 * - The row lock is the liveness signal (docs/design.md, invariant 7): a worker holds its event's
 *   row lock for the whole fulfilment transaction, so a live worker is never reclaimed, however
 *   slow; a dead worker's connection ends and Postgres drops its lock (SKIP LOCKED does the rest).
 * - A waiting job (queued, in its retry backoff, or fetched by a worker less than staleAfterMs
 *   ago: src/queue/job-queue.ts) means nothing is abandoned; a second job would also cut that
 *   backoff short. Those rows are left alone and not counted.
 * - A job locked by a dead worker, a job out of graphile-worker attempts, or no job at all: the
 *   event goes into a fresh job. The dead worker's job stays locked until graphile-worker frees it
 *   (after 4 hours) and then runs once more, finding its events finished: nothing to do.
 * Each reclaim counts as an attempt; the one that reaches maxAttempts ends the event 'failed'
 * instead, so a poison event that kills its worker every time ends visibly.
 *
 * An event that waits (src/events/event-waits.ts) has no job on purpose and is left alone, until
 * its wait_until passes: then it goes into a fresh job, without an attempt counted, to run once
 * more and end ('ignored' or 'failed' with what it waited for) unless what it waited for came.
 */
async function reclaimBatch(db: Kysely<Database>, options: ReclaimOptions): Promise<Array<{ event_id: string; status: EventStatus; expired: boolean }>> {
  const stale = sql<Date>`now() - make_interval(secs => ${options.staleAfterMs / 1000})`;
  // The candidates are locked first in a MATERIALIZED CTE and exactly those are updated: an
  // `IN (subquery ... FOR UPDATE SKIP LOCKED LIMIT n)` may be re-evaluated by the planner and
  // lock and update more rows than its limit (PostgreSQL bug #15715). `waiting` is computed once
  // per statement, and only if some row is old enough to be a candidate; both tests against it
  // are hashed, so the index scan keeps its order and stops at the limit.
  const candidates = sql`
    with waiting as materialized (${waitingJobs(stale)})
    select e.event_id, e.attempts, e.waits_for is not null as expired
    from stripe_events e
    where e.status = 'processing'
      and e.enqueued_at < ${stale}
      and ((e.waits_for is null
        and not coalesce(e.job_key in (select key from waiting where ours), false)
        -- A row enqueued by a release before job keys has no job_key (or an outdated one, when such
        -- a release reclaimed it). Its job was added in the transaction that set enqueued_at, so it
        -- has that created_at; the public view shows no payload to be sure, so any such job of that
        -- instant keeps the row, which errs towards waiting. Nothing matches once no job of those
        -- releases is left (docs/migrations.md, compatibility C2).
        and e.enqueued_at not in (select created_at from waiting where not ours))
        or (e.waits_for is not null and e.wait_until <= now()))
    order by e.enqueued_at
    limit ${options.limit}
    for update of e skip locked`;
  // A wait that gave up spends no attempt: its run ends it, or fulfils it if what it waited for came.
  const giveUp = (expired: RawBuilder<boolean>) => sql`not ${expired} and e.attempts + 1 >= ${options.maxAttempts}`;

  if (options.dryRun) {
    return db.transaction().execute(async (tx) => {
      const { rows } = await sql<{ event_id: string; status: EventStatus; expired: boolean }>`
        select event_id, case when ${giveUp(sql`e.expired`)} then 'failed' else 'processing' end as status, expired from (${candidates}) e`.execute(tx);
      return rows;
    });
  }
  // One statement: the update and the jobs of the rows it re-enqueued commit together, so a sweep
  // that dies midway neither counts nor loses anything.
  const { rows } = await sql<{ event_id: string; status: EventStatus; expired: boolean }>`
    with stale as materialized (${candidates}),
    keyed as (select event_id, expired, ${jobKeyPerRow()} as job_key from stale),
    swept as (
      update stripe_events e set
        attempts = e.attempts + case when keyed.expired then 0 else 1 end,
        waits_for = null,
        enqueued_at = now(),
        job_key = case when ${giveUp(sql`keyed.expired`)} then e.job_key else keyed.job_key end,
        status = case when ${giveUp(sql`keyed.expired`)} then 'failed' else e.status end,
        finished_at = case when ${giveUp(sql`keyed.expired`)} then now() else e.finished_at end,
        last_error = case when ${giveUp(sql`keyed.expired`)}
          then 'abandoned by its worker (crash, kill or timeout) on its last attempt; earlier error: ' || coalesce(e.last_error, 'none')
          else e.last_error end
      from keyed
      where e.event_id = keyed.event_id
      returning e.event_id, e.status, e.job_key, keyed.expired
    ), jobs as (
      select count(*) as added
      from ${addEventJobs(sql`select event_id, job_key from swept where status = 'processing'`, options)}
    )
    select event_id, status, expired from swept cross join jobs`.execute(db);
  return rows;
}
