// The one place that turns event ids into graphile-worker jobs. Payloads carry the id only; the
// task loads the row. The job key is per event, so a re-enqueue (replay, sweep) replaces a
// waiting job instead of adding a second one, and replaces a job locked by a dead worker.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/schema.js';

export const PROCESS_EVENT_TASK = 'process_stripe_event';

export const JOB_KEY_PREFIX = 'stripe_event:';
export const eventJobKey = (eventId: string) => JOB_KEY_PREFIX + eventId;

export interface EnqueueOptions {
  /** graphile-worker's attempts for this job; our own count lives on the event row. */
  maxAttempts: number;
  /**
   * Keep the run_at of a job that is already waiting (in its backoff): the sweep must not
   * cut a backoff short. A replay by ops wants the job to run now, so it passes false.
   */
  preserveRunAt: boolean;
}

export async function enqueueEvents(db: Kysely<Database>, eventIds: readonly string[], options: EnqueueOptions): Promise<void> {
  if (eventIds.length === 0) return;
  await sql`select count(*) from ${addEventJobs(sql`select unnest(${eventIds}::text[])`, options)}`.execute(db);
}

/**
 * graphile_worker.add_jobs for every event id the query `eventIds` yields (one column), as a set
 * returning expression to use in a FROM clause, so a statement can claim and enqueue at once.
 * One call for the whole set: each call ends in one pg_notify, and notifying commits are
 * serialised database-wide, so the count of calls, not of jobs, is what costs.
 */
export function addEventJobs(eventIds: RawBuilder<unknown>, options: EnqueueOptions): RawBuilder<unknown> {
  return sql`graphile_worker.add_jobs(
    array(
      select row(${PROCESS_EVENT_TASK}, json_build_object('eventId', id), null, null,
                 ${options.maxAttempts}::int, ${JOB_KEY_PREFIX}::text || id, null, null
             )::graphile_worker.job_spec
      from (${eventIds}) as ids(id)
    ),
    ${options.preserveRunAt}
  )`;
}

/**
 * Deletes jobs that can never run again: those the sweep replaced (add_jobs cleared their key and
 * used up their attempts) once graphile-worker has unlocked them (it does after 4 hours). Nothing
 * else removes them. Returns how many went.
 */
export async function deleteReplacedJobs(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    with gone as (
      delete from graphile_worker._private_jobs j
      using graphile_worker._private_tasks t
      where t.id = j.task_id and t.identifier = ${PROCESS_EVENT_TASK}
        and j.key is null and j.attempts >= j.max_attempts and j.locked_at is null
      returning 1)
    select count(*)::int as n from gone`.execute(db);
  return rows[0]?.n ?? 0;
}
