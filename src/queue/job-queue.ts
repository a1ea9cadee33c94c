// graphile-worker's queue as this service uses it: adding the `process_stripe_event` jobs that
// carry claimed events, which of those jobs still wait, how many are queued, and adding a business
// module's own jobs (deleting the ones that can never run again is prune's:
// src/maintenance/prune-jobs.ts). Only graphile-worker's public interface is used (the
// `graphile_worker.jobs` view and its SQL functions add_jobs, add_job, complete_jobs); the tables
// behind them are private to it and may change in any release (docs/operations.md). Running the
// jobs is src/worker/start-worker.ts.
//
// A job carries the events claimed (or reclaimed, or replayed) together, up to EVENTS_PER_JOB, as a
// graphile-worker batch job: payload [{ eventId }, ...]; the task loads the rows. One job per batch
// rather than per event is what lets a backlog drain at several times graphile-worker's per-job
// rate (docs/speed.md): the fetch, the completion and the
// transaction are paid once for the batch.
//
// Every job gets a fresh key, and each event it carries stores that key (stripe_events.job_key)
// in the same statement. The public view shows keys but not payloads, so the key is how the sweep
// tells whether an event's job is still waiting. Keys are never reused, so graphile-worker's
// replace-on-same-key rule never applies. Nothing depends on one job per event: fulfilment locks
// the row and skips an event that is no longer 'processing', so a second job for an event (a
// replay, a reclaim racing a late commit) finds nothing to do.
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

/** The task that fulfils events (tasks/process_stripe_event.ts); stored in every queued job, so it stays. */
export const PROCESS_EVENT_TASK = 'process_stripe_event';

/**
 * Most events in one job, so in one fulfilment transaction. Larger batches gain little once the
 * per-job cost is shared (docs/speed.md) and cost more when
 * one event fails (the batch is rolled back and its events fulfilled one by one) or a worker dies
 * mid-batch (all of its events wait for the sweep).
 */
export const EVENTS_PER_JOB = 25;

/** Our job keys start with this; a job without it was added by a release before job keys (docs/migrations.md, compatibility C2). */
const JOB_KEY_PREFIX = 'stripe_events:';

export interface EnqueueOptions {
  /**
   * The attempts an event gets: graphile-worker's max_attempts for its job, and the limit of the
   * event row's own count (which outlives the job: reclaims and replays add attempts to the row).
   */
  maxAttempts: number;
}

/** A fresh prefix for the keys of the jobs of one enqueue: a batch number follows it. */
export function newJobKeyPrefix(): string {
  return `${JOB_KEY_PREFIX}${randomUUID()}:`;
}

/** Job keys for `count` events enqueued together, in order: a fresh key for each EVENTS_PER_JOB. */
export function jobKeys(count: number): string[] {
  const prefix = newJobKeyPrefix();
  return Array.from({ length: count }, (_, i) => prefix + Math.floor(i / EVENTS_PER_JOB));
}

/** The same keys as a SQL expression over the rows of one query (a window function: use it in a select list). */
export function jobKeyPerRow(): RawBuilder<string> {
  return sql<string>`${newJobKeyPrefix()}::text || ((row_number() over () - 1) / ${EVENTS_PER_JOB})`;
}

/**
 * graphile_worker.add_jobs for the rows the query `keyed` yields (event_id, job_key): one job per
 * key, carrying its events. A set returning expression to use in a FROM clause, so one statement
 * can write the rows and enqueue them. One call for the whole set: each call ends in one
 * pg_notify, and notifying commits are serialised database-wide, so the count of calls, not of
 * jobs, is what costs.
 */
export function addEventJobs(keyed: RawBuilder<unknown>, options: EnqueueOptions): RawBuilder<unknown> {
  return sql`graphile_worker.add_jobs(
    array(
      select row(${PROCESS_EVENT_TASK}, json_agg(json_build_object('eventId', event_id)), null, null,
                 ${options.maxAttempts}::int, job_key, null, null
             )::graphile_worker.job_spec
      from (${keyed}) as keyed(event_id, job_key)
      group by job_key
    )
  )`;
}

/**
 * Our jobs that will still run, as (key, created_at): queued or in their retry backoff, or
 * fetched by a worker less than `staleBefore` ago (under a backlog a live worker may hold a job a
 * while, waiting for a pooled connection, before it takes the row locks). The sweep leaves the
 * events of these jobs alone (src/maintenance/sweep.ts).
 */
export function waitingJobs(staleBefore: RawBuilder<Date>): RawBuilder<{ key: string | null; created_at: Date; ours: boolean }> {
  return sql`
    select j.key, j.created_at, coalesce(starts_with(j.key, ${JOB_KEY_PREFIX}), false) as ours
    from graphile_worker.jobs j
    where j.task_identifier = ${PROCESS_EVENT_TASK}
      and ((j.locked_at is null and j.attempts < j.max_attempts) or j.locked_at > ${staleBefore})`;
}

/** Fulfilment jobs that will run again (not out of attempts), and the events they carry. */
export async function countQueuedJobs(db: Kysely<Database>): Promise<{ jobs: number; events: number }> {
  const { rows } = await sql<{ jobs: number; events: number }>`
    with queued as (
      select j.key from graphile_worker.jobs j
      where j.task_identifier = ${PROCESS_EVENT_TASK} and j.attempts < j.max_attempts
    )
    select (select count(*) from queued)::int as jobs,
           (select count(*) from stripe_events e
            where e.status = 'processing' and e.job_key in (select key from queued))::int as events`.execute(db);
  return rows[0] ?? { jobs: 0, events: 0 };
}

/**
 * A job of one of our own tasks (a maintenance task, or a business module's: modules get it as
 * addModuleJob), added in the caller's transaction so it exists exactly when the caller's writes
 * commit. A job with the same key that has not started yet is replaced, so a burst of requests
 * for the same thing makes one job.
 */
export async function addJob(
  tx: Transaction<Database>,
  task: string,
  payload: object,
  options: {
    key: string;
    maxAttempts: number;
    /** Not to run sooner than this. */
    inSeconds?: number;
  },
): Promise<void> {
  await sql`
    select graphile_worker.add_job(${task}, ${JSON.stringify(payload)}::json, max_attempts => ${options.maxAttempts}::int, job_key => ${options.key},
      run_at => now() + make_interval(secs => ${options.inSeconds ?? 0}))`.execute(tx);
}
