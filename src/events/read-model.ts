// The inbox as ops read it: status at a glance (GET /admin/api/status, `npm run status`, the
// metrics' gauges), the dashboard's timeline, search and event detail (its lists are in
// event-lists.ts). Reads only; the writers of stripe_events are in event-store.ts.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { EVENT_STATUSES, type Database, type EventStatus, type StripeEventRow } from '../db/schema.js';
import { lastMaintenanceRun } from '../db/maintenance-runs.js';
import { countQueuedJobs } from '../queue/job-queue.js';
import { summaryColumns, waitColumns, type EventSummary } from './event-lists.js';

export interface InboxStatus {
  counts: Record<EventStatus, number>;
  /**
   * When the finished statuses (processed, ignored, duplicate) were counted: now, or up to
   * HISTORY_RECOUNT_MS ago once the history is large (inboxStatusReader). 'processing' and
   * 'failed' are always counted now.
   */
  history_counted_at: string;
  /** Of the 'processing' events, those parked while they wait for what Stripe delivers later (src/events/event-waits.ts): expected, no alert. */
  waiting: number;
  /** Of those being fulfilled, not of those waiting: the age an alert watches. */
  oldest_processing_age_seconds: number | null;
  /** Fulfilment jobs waiting or running; each carries a batch of events. */
  jobs_queued: number;
  /** The 'processing' events those jobs carry (jobs of releases before job keys are not counted: docs/migrations.md, compatibility C2). */
  events_queued: number;
  last_sweep_at: string | null;
}

/** What an operator acts on: few rows, each counted by its partial index. */
type LiveStatus = 'processing' | 'failed';
type HistoryStatus = Exclude<EventStatus, LiveStatus>;
/** The statuses an event ends in and keeps until prune: counting them reads every such row. */
const HISTORY_STATUSES = EVENT_STATUSES.filter((s): s is HistoryStatus => s !== 'processing' && s !== 'failed');
/** Under this many finished events, they are counted on every read. */
export const HISTORY_COUNTED_LIVE = 100_000;
/** Above it, at most once per this long per process. */
export const HISTORY_RECOUNT_MS = 10 * 60_000;

/**
 * Reads the inbox's status, for a caller that asks again and again (the dashboard every 5 s, each
 * metrics scrape). 'processing' and 'failed', what an operator acts on, are counted on every read,
 * by their partial indexes: cheap however long the history. The finished statuses are the
 * history (up to EVENT_RETENTION_DAYS of it), and counting them reads every such row, pushing the
 * pages the service works on out of Postgres's cache: once there are more than
 * HISTORY_COUNTED_LIVE, the last count is reused for HISTORY_RECOUNT_MS.
 */
export function inboxStatusReader(db: Kysely<Database>, clock: () => number = Date.now): () => Promise<InboxStatus> {
  let history: { counts: Record<HistoryStatus, number>; at: number } | undefined;
  // Reads that find the history due at once (two dashboards, a scrape) share one read.
  let recounting: Promise<InboxStatus> | undefined;
  const historyDue = () => {
    if (!history) return true;
    const total = HISTORY_STATUSES.reduce((n, s) => n + history!.counts[s], 0);
    return total < HISTORY_COUNTED_LIVE || clock() - history.at >= HISTORY_RECOUNT_MS;
  };
  // Every count of one read in one snapshot: an event that finishes while it runs is counted
  // once, as waiting or as finished, and never in neither (read committed would give each
  // statement its own snapshot).
  const read = (countHistory: boolean) =>
    db
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (tx): Promise<InboxStatus> => {
        if (countHistory || !history) history = { counts: await countHistoryStatuses(tx), at: clock() };
        // Each count by its own partial index (a predicate that names one status is what lets Postgres use it).
        const live = await tx
          .selectNoFrom([
            sql<number>`(select count(*)::int from stripe_events where status = 'processing')`.as('processing'),
            sql<number>`(select count(*)::int from stripe_events where status = 'processing' and waits_for is not null)`.as('waiting'),
            sql<number>`(select count(*)::int from stripe_events where status = 'failed')`.as('failed'),
            // Served by the partial index on processing rows. A waiting event is old on purpose.
            sql<
              number | null
            >`(select extract(epoch from now() - min(enqueued_at))::int from stripe_events where status = 'processing' and waits_for is null)`.as('oldest'),
          ])
          .executeTakeFirstOrThrow();
        const queued = await countQueuedJobs(tx);
        const counts = Object.fromEntries(EVENT_STATUSES.map((s) => [s, 0])) as Record<EventStatus, number>;
        Object.assign(counts, history.counts, { processing: live.processing, failed: live.failed });
        return {
          counts,
          history_counted_at: new Date(history.at).toISOString(),
          waiting: live.waiting,
          oldest_processing_age_seconds: live.oldest,
          jobs_queued: queued.jobs,
          events_queued: queued.events,
          last_sweep_at: (await lastMaintenanceRun(tx, 'sweep'))?.toISOString() ?? null,
        };
      });
  return () => (historyDue() ? (recounting ??= read(true).finally(() => (recounting = undefined))) : read(false));
}

async function countHistoryStatuses(db: Kysely<Database>): Promise<Record<HistoryStatus, number>> {
  const rows = await db
    .selectFrom('stripe_events')
    .select(['status', sql<number>`count(*)::int`.as('n')])
    .where('status', 'in', HISTORY_STATUSES)
    .groupBy('status')
    .execute();
  const counts = Object.fromEntries(HISTORY_STATUSES.map((s) => [s, 0])) as Record<HistoryStatus, number>;
  for (const row of rows) counts[row.status as HistoryStatus] = row.n;
  return counts;
}

/** A row of the business that an event touched or names: the dashboard's event detail shows it. */
export interface BusinessRecord {
  /** What it is, in the module's words: 'order', 'subscription'. */
  readonly kind: string;
  readonly id: string;
  readonly fields: Readonly<Record<string, string | number | boolean | null>>;
}

/** What a business module tells the dashboard about events (part of the module contract, src/module-contract.ts). */
export interface EventLookups {
  /** The records an event touched or names, for the dashboard's event detail. */
  eventRecords?(db: Kysely<Database>, event: Pick<StripeEventRow, 'event_id' | 'type' | 'object_id' | 'payload'>): Promise<BusinessRecord[]>;
  /** Ids of the events about a record of the module (an order id), for the dashboard's search. */
  searchEvents?(db: Kysely<Database>, term: string): Promise<string[]>;
}

/**
 * Whether a stored payload holds `value` at one of `paths` (each a list of keys, as `#>>` takes
 * them): for a module's searchEvents, which reads every stored event. A payload is kept as json
 * text (sql/0017), and `#>>` parses the text of each row it reads, several times jsonb's cost; a
 * row whose text does not contain the value as JSON writes a string cannot match, and a substring
 * test skips its parse. (The values searched for are the modules' own ids, letters, digits and
 * underscores, which every JSON encoder writes as they are.) A CASE, so that the test runs first:
 * the planner may order plain conditions the other way round.
 */
export function payloadHolds(paths: ReadonlyArray<readonly string[]>, value: string): RawBuilder<boolean> {
  const matches = paths.map((path) => sql`payload #>> ${path}::text[] = ${value}`);
  return sql<boolean>`case when strpos(payload::text, ${JSON.stringify(value)}) > 0 then (${sql.join(matches, sql` or `)}) else false end`;
}

/**
 * An event's payload as stored: the text Stripe signed, never parsed. A parse and a stringify
 * would show 1e400 as null and 18446744073709551617 as 18446744073709552000, and keep one of two
 * equal keys; an operator comparing with Stripe's Dashboard must see what Stripe sent.
 */
export async function findPayloadText(db: Kysely<Database>, eventId: string): Promise<string | undefined> {
  // ::text reads a json column's text as it was stored (pg would parse the json type).
  const row = await db
    .selectFrom('stripe_events')
    .select(sql<string>`payload::text`.as('text'))
    .where('event_id', '=', eventId)
    .executeTakeFirst();
  return row?.text;
}

export interface EventDetail {
  /** The body Stripe signed, as stored (findPayloadText): JSON text. */
  payloadText: string;
  /** Other events about the same Stripe object (retried actions, later updates), newest first. */
  related: EventSummary[];
  /** What the business modules hold about it: the order it named or granted, ... */
  records: BusinessRecord[];
  /** While it is parked: what wakes it and when its wait gives up (as in EventSummary). */
  waits_for: string[] | null;
  wait_until: Date | null;
}

/** What an operator looks at first when a payment went wrong: the payload, its neighbours, its business records. */
export async function eventDetail(
  db: Kysely<Database>,
  event: Pick<StripeEventRow, 'event_id' | 'type' | 'object_id' | 'payload'>,
  modules: readonly EventLookups[],
): Promise<EventDetail> {
  const related =
    event.object_id === null
      ? []
      : await db
          .selectFrom('stripe_events')
          .select(summaryColumns)
          .where('object_id', '=', event.object_id)
          .where('event_id', '<>', event.event_id)
          .orderBy('received_at', 'desc')
          .limit(20)
          .execute();
  const [payloadText, records, wait] = await Promise.all([
    findPayloadText(db, event.event_id),
    Promise.all(modules.map((m) => m.eventRecords?.(db, event) ?? Promise.resolve([]))).then((found) => found.flat()),
    db.selectFrom('stripe_events').select(waitColumns).where('event_id', '=', event.event_id).executeTakeFirst(),
  ]);
  // Prune may delete the event between the read of its row and this one: no payload, then.
  return { payloadText: payloadText ?? 'null', related, records, waits_for: wait?.waits_for ?? null, wait_until: wait?.wait_until ?? null };
}

/** Events whose id or object id is `term`, or that a business module finds by it (an order id). */
export async function searchEvents(db: Kysely<Database>, term: string, modules: readonly EventLookups[], limit = 50): Promise<EventSummary[]> {
  const found = (await Promise.all(modules.map((m) => m.searchEvents?.(db, term) ?? Promise.resolve([])))).flat();
  return db
    .selectFrom('stripe_events')
    .select(summaryColumns)
    .where((eb) => eb.or([eb('event_id', '=', term), eb('object_id', '=', term), ...(found.length > 0 ? [eb('event_id', 'in', found)] : [])]))
    .orderBy('received_at', 'desc')
    .limit(limit)
    .execute();
}

export interface MinuteCounts {
  minute: string;
  received: number;
  finished: number;
  failed: number;
}

/** Received, finished and failed events per minute over the last `hours`, oldest first. */
export async function eventTimeline(db: Kysely<Database>, hours: number): Promise<MinuteCounts[]> {
  const { rows } = await sql<MinuteCounts>`
    with minutes as (
      select generate_series(date_trunc('minute', now() - make_interval(hours => ${hours})), date_trunc('minute', now()), interval '1 minute') as minute
    ), received as (
      select date_trunc('minute', received_at) as minute, count(*)::int as n
      from stripe_events where received_at >= now() - make_interval(hours => ${hours}) group by 1
    ), finished as (
      select date_trunc('minute', finished_at) as minute,
             count(*) filter (where status <> 'failed')::int as finished,
             count(*) filter (where status = 'failed')::int as failed
      from stripe_events where finished_at >= now() - make_interval(hours => ${hours}) group by 1
    )
    select to_char(m.minute at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') as minute,
           coalesce(r.n, 0) as received, coalesce(f.finished, 0) as finished, coalesce(f.failed, 0) as failed
    from minutes m left join received r using (minute) left join finished f using (minute)
    order by m.minute`.execute(db);
  return rows;
}

export interface TypeCounts {
  type: string;
  counts: Record<EventStatus, number>;
}

/** Events received since `since`, by type and status, busiest type first. */
export async function countsByType(db: Kysely<Database>, since: Date): Promise<TypeCounts[]> {
  const rows = await db
    .selectFrom('stripe_events')
    .select(['type', 'status', sql<number>`count(*)::int`.as('n')])
    .where('received_at', '>=', since)
    .groupBy(['type', 'status'])
    .execute();
  const byType = new Map<string, Record<EventStatus, number>>();
  for (const row of rows) {
    const counts = byType.get(row.type) ?? (Object.fromEntries(EVENT_STATUSES.map((s) => [s, 0])) as Record<EventStatus, number>);
    counts[row.status] = row.n;
    byType.set(row.type, counts);
  }
  const total = (c: Record<EventStatus, number>) => Object.values(c).reduce((a, b) => a + b, 0);
  return [...byType].map(([type, counts]) => ({ type, counts })).sort((a, b) => total(b.counts) - total(a.counts));
}
