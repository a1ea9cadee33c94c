// graphile-worker's jobs as the tests see them. A process_stripe_event job carries a batch of
// events (src/events/enqueue.ts); job_event_ids (sql/0006) lists them, as the sweep reads them.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';

export interface JobRow {
  id: string;
  event_ids: string[];
  attempts: number;
  max_attempts: number;
  locked_at: Date | null;
  locked_by: string | null;
  run_at: Date;
  last_error: string | null;
}

// graphile-worker's own table: its public view (graphile_worker.jobs) has no payload.
const jobs = sql`
  select j.id, array(select job_event_ids(j.payload)) as event_ids, j.attempts, j.max_attempts, j.locked_at, j.locked_by, j.run_at, j.last_error
  from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id and t.identifier = 'process_stripe_event'`;

/** The jobs carrying `eventId`, oldest first. */
export async function jobsCarrying(db: Kysely<Database>, eventId: string): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`
    ${jobs} where ${eventId} in (select job_event_ids(j.payload)) order by j.id`.execute(db);
  return rows;
}

/** Every fulfilment job, oldest first. */
export async function fulfilmentJobs(db: Kysely<Database>): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`
    ${jobs} order by j.id`.execute(db);
  return rows;
}
