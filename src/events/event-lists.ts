// The event lists an operator reads (the dashboard, the admin API, npm run status): each event's
// summary, with what it waits for while it is parked (docs/events.md, "Waiting for what comes later").
import { sql, type Kysely } from 'kysely';
import type { Database, EventStatus } from '../db/schema.js';

export interface EventSummary {
  event_id: string;
  type: string;
  object_id: string | null;
  status: EventStatus;
  attempts: number;
  last_error: string | null;
  received_at: Date;
  enqueued_at: Date;
  finished_at: Date | null;
  /** While it is parked (docs/events.md, "Waiting for what comes later"): the keys that wake it, and when its wait gives up; else null. */
  waits_for: string[] | null;
  wait_until: Date | null;
}

// The wait columns mean something only on a 'processing' row: the finish statement leaves them as they were (sql/0026).
export const waitColumns = [
  sql<string[] | null>`case when status = 'processing' then waits_for end`.as('waits_for'),
  sql<Date | null>`case when status = 'processing' and waits_for is not null then wait_until end`.as('wait_until'),
] as const;
export const summaryColumns = [
  'event_id',
  'type',
  'object_id',
  'status',
  'attempts',
  'last_error',
  'received_at',
  'enqueued_at',
  'finished_at',
  ...waitColumns,
] as const;

/** The dead letters, newest first: what an operator must look at. */
export async function listFailedEvents(db: Kysely<Database>, limit: number): Promise<EventSummary[]> {
  return db.selectFrom('stripe_events').select(summaryColumns).where('status', '=', 'failed').orderBy('finished_at', 'desc').limit(limit).execute();
}

/**
 * 'processing' events not fulfilled for longer than `olderThanMs` since their last enqueue, oldest
 * first. A parked event is old on purpose, not stuck: listWaitingEvents lists those.
 */
export async function listStuckEvents(db: Kysely<Database>, olderThanMs: number, limit: number): Promise<EventSummary[]> {
  return db
    .selectFrom('stripe_events')
    .select(summaryColumns)
    .where('status', '=', 'processing')
    .where('waits_for', 'is', null)
    .where('enqueued_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .orderBy('enqueued_at')
    .limit(limit)
    .execute();
}

/** The parked events, the first to give up first: what each waits for (`waits_for`, and the reason in `last_error`) and until when. */
export async function listWaitingEvents(db: Kysely<Database>, limit: number): Promise<EventSummary[]> {
  return db
    .selectFrom('stripe_events')
    .select(summaryColumns)
    .where('status', '=', 'processing')
    .where('waits_for', 'is not', null)
    .orderBy('wait_until')
    .orderBy('event_id')
    .limit(limit)
    .execute();
}
