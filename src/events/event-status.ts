// The inbox at a glance, shared by GET /admin/api/status and `npm run status -- --json`.
import { sql, type Kysely } from 'kysely';
import { EVENT_STATUSES, type Database, type EventStatus } from '../db/schema.js';
import { lastMaintenanceRun } from '../db/maintenance-runs.js';
import { SWEEP_RUN_NAME } from '../sweep/sweep-stale-events.js';
import { PROCESS_EVENT_TASK } from './enqueue.js';

export interface InboxStatus {
  counts: Record<EventStatus, number>;
  oldest_processing_age_seconds: number | null;
  jobs_queued: number;
  last_sweep_at: string | null;
}

export async function getInboxStatus(db: Kysely<Database>): Promise<InboxStatus> {
  const rows = await db.selectFrom('stripe_events').select(['status', sql<number>`count(*)::int`.as('n')]).groupBy('status').execute();
  const counts = Object.fromEntries(EVENT_STATUSES.map((s) => [s, 0])) as Record<EventStatus, number>;
  for (const row of rows) counts[row.status] = row.n;

  // Served by the partial index on processing rows.
  const oldest = await db
    .selectFrom('stripe_events')
    .select(sql<number>`extract(epoch from now() - min(enqueued_at))::int`.as('age'))
    .where('status', '=', 'processing')
    .executeTakeFirst();
  const { rows: jobs } = await sql<{ n: number }>`
    select count(*)::int as n from graphile_worker.jobs
    where task_identifier = ${PROCESS_EVENT_TASK} and attempts < max_attempts`.execute(db);

  return {
    counts,
    oldest_processing_age_seconds: oldest?.age ?? null,
    jobs_queued: jobs[0]?.n ?? 0,
    last_sweep_at: (await lastMaintenanceRun(db, SWEEP_RUN_NAME))?.toISOString() ?? null,
  };
}

export interface FailedEvent {
  event_id: string;
  type: string;
  attempts: number;
  last_error: string | null;
  finished_at: Date | null;
}

/** The dead letters, newest first: what an operator must look at. */
export async function listFailedEvents(db: Kysely<Database>, limit: number): Promise<FailedEvent[]> {
  return db
    .selectFrom('stripe_events')
    .select(['event_id', 'type', 'attempts', 'last_error', 'finished_at'])
    .where('status', '=', 'failed')
    .orderBy('finished_at', 'desc')
    .limit(limit)
    .execute();
}
