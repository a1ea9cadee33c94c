// graphile-worker's jobs as the tests see them, through its public interface only: the
// `graphile_worker.jobs` view and its SQL functions. The view has no payload; which events a job
// carries is what our rows say (stripe_events.job_key, src/queue/job-queue.ts), and a worker that
// takes jobs (holdJobs) sees the payloads themselves.
import { run, type Runner } from 'graphile-worker';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import { createLogger } from '../../src/logger.js';
import { graphileLogger } from '../../src/queue/graphile-logger.js';
import type { TestDatabase } from './database.js';
import { waitFor } from './wait-for.js';

export interface JobRow {
  id: string;
  key: string | null;
  /** The events whose last enqueue went into this job, sorted. */
  event_ids: string[];
  attempts: number;
  max_attempts: number;
  locked_at: Date | null;
  locked_by: string | null;
  run_at: Date;
  created_at: Date;
  last_error: string | null;
}

const jobs = sql`
  select j.id, j.key, array(select e.event_id from stripe_events e where e.job_key = j.key order by e.event_id) as event_ids,
         j.attempts, j.max_attempts, j.locked_at, j.locked_by, j.run_at, j.created_at, j.last_error
  from graphile_worker.jobs j where j.task_identifier = 'process_stripe_event'`;

/** The job of the event's last enqueue, if it still exists. */
export async function jobOf(db: Kysely<Database>, eventId: string): Promise<JobRow | undefined> {
  const { rows } = await sql<JobRow>`
    ${jobs} and j.key = (select job_key from stripe_events where event_id = ${eventId})`.execute(db);
  return rows[0];
}

/** Every fulfilment job, oldest first. */
export async function fulfilmentJobs(db: Kysely<Database>): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`${jobs} order by j.id`.execute(db);
  return rows;
}

/** Whether no job has `key` any more: the job queued with it ran to its end (or never was). */
export async function jobDone(db: Kysely<Database>, key: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs where key = ${key}`.execute(db);
  return rows[0]!.n === 0;
}

/** How many jobs of any task a worker holds: taken and not yet completed or failed. */
export async function lockedJobs(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ locked: number }>`select count(*)::int as locked from graphile_worker.jobs where locked_at is not null`.execute(db);
  return rows[0]?.locked ?? 0;
}

/** Deletes every job no worker holds, as graphile-worker does when a job completes. */
export async function deleteJobs(db: Kysely<Database>, eventIds?: readonly string[]): Promise<void> {
  await sql`select count(*) from graphile_worker.complete_jobs(array(
    select j.id from graphile_worker.jobs j
    where ${eventIds === undefined} or j.key in (select job_key from stripe_events where event_id = any(${eventIds ?? []}::text[]))))`.execute(db);
}

export interface HeldJob {
  id: string;
  payload: unknown;
  eventIds: string[];
}

export interface JobHolder {
  /** The jobs taken, in the order the worker took them. */
  readonly jobs: HeldJob[];
  /** Lets the held jobs finish (doing nothing) and stops the worker. */
  release(): Promise<void>;
}

/**
 * A real graphile-worker that takes `count` fulfilment jobs and holds them without touching their
 * events: to the database it is a worker that died after fetching its jobs (locked, and no row
 * lock held), until release(). With every slot busy it takes no other job.
 */
export async function holdJobs(database: TestDatabase, count: number): Promise<JobHolder> {
  const held: HeldJob[] = [];
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  const runner: Runner = await run({
    pgPool: database.pool,
    concurrency: count,
    noHandleSignals: true,
    pollInterval: 100,
    logger: graphileLogger(createLogger('warn')),
    taskList: {
      process_stripe_event: async (payload, helpers) => {
        held.push({ id: helpers.job.id, payload, eventIds: (payload as Array<{ eventId: string }>).map((ref) => ref.eventId) });
        await released;
      },
    },
  });
  await waitFor(`a worker to hold ${count} job(s)`, () => Promise.resolve(held.length >= count));
  return {
    jobs: held,
    async release() {
      letGo();
      await runner.stop();
    },
  };
}

/** Waits until every job `holder` took was locked more than `ms` ago, by the database's clock. */
export async function lockedLongerThan(db: Kysely<Database>, holder: JobHolder, ms: number): Promise<void> {
  await waitFor(`the held jobs' locks to be older than ${ms} ms`, async () => {
    const { rows } = await sql<{ old: boolean }>`
      select bool_and(locked_at < now() - make_interval(secs => ${ms / 1000})) as old
      from graphile_worker.jobs where id = any(${holder.jobs.map((j) => j.id)}::bigint[])`.execute(db);
    return rows[0]?.old === true;
  });
}
