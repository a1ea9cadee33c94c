// The one place that turns event ids into graphile-worker jobs. A job carries the events claimed
// (or reclaimed, or replayed) together, up to EVENTS_PER_JOB, as a graphile-worker batch job:
// payload [{ eventId }, ...]; the task loads the rows. One job per batch rather than per event is
// what lets a backlog drain at several times graphile-worker's per-job rate (docs/benchmarks.md):
// the fetch, the completion and the transaction are paid once for the batch.
//
// Jobs have no key. Nothing depends on there being one job per event: fulfilment locks the row
// and skips an event that is no longer 'processing', so a second job for an event (a replay, a
// reclaim racing a late commit) finds nothing to do. Which events a job carries is read from its
// payload (job_event_ids, sql/0006) by the sweep and by status. The sweep finds an event's job by
// its created_at, so events are enqueued in the transaction that sets their enqueued_at (both
// now(); a test in test/sweep/sweep-stale-events.test.ts holds claim, replay and reclaim to it).
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/schema.js';

export const PROCESS_EVENT_TASK = 'process_stripe_event';

/**
 * Most events in one job, so in one fulfilment transaction. Larger batches gain little once the
 * per-job cost is shared (figures in docs/benchmarks.md) and cost more when one event fails (the
 * batch is rolled back and its events fulfilled one by one) or a worker dies mid-batch (all of
 * its events wait for the sweep).
 */
export const EVENTS_PER_JOB = 25;

export interface EnqueueOptions {
  /** graphile-worker's attempts for this job; our own count lives on the event row. */
  maxAttempts: number;
}

export async function enqueueEvents(db: Kysely<Database>, eventIds: readonly string[], options: EnqueueOptions): Promise<void> {
  if (eventIds.length === 0) return;
  await sql`select count(*) from ${addEventJobs(sql`select unnest(${eventIds}::text[])`, options)}`.execute(db);
}

/**
 * graphile_worker.add_jobs for the event ids the query `eventIds` yields (one column), in jobs of
 * up to EVENTS_PER_JOB, as a set returning expression to use in a FROM clause, so a statement can
 * claim and enqueue at once. One call for the whole set: each call ends in one pg_notify, and
 * notifying commits are serialised database-wide, so the count of calls, not of jobs, is what costs.
 */
export function addEventJobs(eventIds: RawBuilder<unknown>, options: EnqueueOptions): RawBuilder<unknown> {
  return sql`graphile_worker.add_jobs(
    array(
      select row(${PROCESS_EVENT_TASK}, json_agg(json_build_object('eventId', id)), null, null,
                 ${options.maxAttempts}::int, null, null, null
             )::graphile_worker.job_spec
      from (select id, (row_number() over () - 1) / ${EVENTS_PER_JOB} as job from (${eventIds}) as ids(id)) as numbered
      group by job
    )
  )`;
}

/**
 * Deletes fulfilment jobs that can never run again: out of graphile-worker's attempts and not
 * locked. Their events ended 'failed' on the row first (the row counts every attempt, and a job
 * never has more than the row allows), so the row is the dead letter and the job is litter. From
 * releases before batch jobs, it also takes the jobs the sweep replaced by key. graphile-worker
 * itself keeps such jobs forever. Returns how many went.
 */
export async function deleteSpentJobs(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with gone as (
      delete from graphile_worker._private_jobs j
      using graphile_worker._private_tasks t
      where t.id = j.task_id and t.identifier = ${PROCESS_EVENT_TASK}
        and j.attempts >= j.max_attempts and j.locked_at is null
      returning 1)
    select count(*)::int as n from gone`.execute(db);
  return rows[0]?.n ?? 0;
}
