// Prune of graphile-worker's fulfilment jobs that can never run again: out of attempts and not
// locked. Their events ended 'failed' on the row first (the row counts every attempt, and a job
// never has more than the row allows), so the row is the dead letter and the job is litter;
// graphile-worker itself keeps such jobs forever. Not a batched delete like the other prunes: the
// queue's tables are private to graphile-worker, so this goes through its public view and its
// complete_jobs(), which deletes only jobs no live worker holds (unlocked, or locked over 4 hours
// ago).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { PROCESS_EVENT_TASK } from '../queue/job-queue.js';

/** Deletes the spent fulfilment jobs. Returns how many went. */
export async function pruneSpentJobs(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from graphile_worker.complete_jobs(array(
      select j.id from graphile_worker.jobs j
      where j.task_identifier = ${PROCESS_EVENT_TASK} and j.attempts >= j.max_attempts and j.locked_at is null))`.execute(db);
  return rows[0]?.n ?? 0;
}
