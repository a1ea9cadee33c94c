// Every status change of stripe_events is a named function here: claim, lock for fulfilment,
// finish, record a failure, replay. The route, the task and the scripts call these; none of them
// carries its own UPDATE. The other writers are the two maintenance services, each statement
// beside its loop, defaults and schedule: the sweep's reclaim (src/maintenance/sweep.ts) and
// prune's delete (src/maintenance/prune-events.ts). The state machine itself is enforced by CHECK constraints in sql/0001 (a finished row has finished_at, a failed
// row has last_error, ...).
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, EventStatus, StripeEventRow, StripeEventsTable } from '../db/schema.js';
import type { FinishOutcome } from '../outcomes.js';
import { addEventJobs, jobKeys, type EnqueueOptions } from '../queue/job-queue.js';
import { tracingOn } from '../tracing/trace-context.js';

/** A verified delivery, reduced to what the inbox stores. */
export interface IncomingEvent {
  readonly eventId: string;
  readonly type: string;
  readonly objectId: string | null;
  readonly livemode: boolean;
  readonly stripeCreatedAt: Date;
  /**
   * The snapshot event this delivery tells of: a snapshot event's own id, a thin notification's
   * `snapshot_event` (null when it has none). Two deliveries naming one are one happening
   * (sql/0024): the first claimed fulfils, the other is stored 'duplicate' of it.
   */
  readonly snapshotEventId: string | null;
  /**
   * The exact body Stripe signed, as bytes (UTF-8, without a byte-order mark): stored as is (a
   * json column keeps the text), never parsed and re-serialised. Bytes rather than a string, so a
   * body waiting for its commit sits outside V8's heap instead of being copied by each
   * collection it outlives.
   */
  readonly rawBody: Buffer;
  /** The webhook request's span, as a W3C traceparent: only while tracing is on (src/tracing/). */
  readonly traceparent?: string;
}

export type ClaimOutcome = 'claimed' | 'duplicate';

/**
 * How an event that this release does not act on ends as it is claimed, with no job
 * (src/fulfilment/finish-at-intake.ts): unless a running release registered `actedOnAs` in
 * event_types_acted_on (sql/0031), in which case it gets its job like any other.
 */
export interface IntakeFinish {
  status: 'processed' | 'ignored';
  reason: string | null;
  /** The type as the registry names it: a v1 thin type as its snapshot type. */
  actedOnAs: string;
}

export interface ClaimOptions extends EnqueueOptions {
  /** Which events this release would finish at once; without it every event gets a job. */
  finishAtIntake?: (event: IncomingEvent) => IntakeFinish | undefined;
}

// Named rather than `*`, so reading a row is a prepared statement that a migration adding a column
// does not break (src/db/prepared-statements.ts). A column missing here is a type error where the
// row is returned.
const EVENT_COLUMNS = [
  'event_id',
  'type',
  'object_id',
  'livemode',
  'stripe_created_at',
  'payload',
  'status',
  'attempts',
  'last_error',
  'duplicate_of',
  'received_at',
  'enqueued_at',
  'finished_at',
  'job_key',
] as const satisfies ReadonlyArray<keyof StripeEventsTable>;
/**
 * The row as fulfilment reads it: with its stored trace context only while tracing is on, so that
 * with tracing off the read is the one it was before sql/0033 (src/tracing/).
 */
const eventColumns = () => (tracingOn() ? [...EVENT_COLUMNS, 'trace_context' as const] : EVENT_COLUMNS);

/**
 * Claims each event id and enqueues its job in one statement, so in one transaction
 * (docs/design.md, invariants 1 and 3): when this resolves, every event is durable together with
 * the means to process it. An id that is already stored (a retry, a concurrent delivery, a resend)
 * is 'duplicate' and gets no job. Concurrent claims of one id do not fail: ON CONFLICT waits for
 * the other transaction and then does nothing, so a second delivery never sees an error (an error
 * would be a 5xx and another retry). Takes a batch so deliveries arriving together can share one
 * commit (claim-batcher.ts).
 *
 * A new id whose happening another event already claimed (a thin notification and the snapshot
 * event it names, sql/0024) is stored at once as 'duplicate' of that event, with no job: the
 * snapshot_claims primary key decides, so two instances claiming the pair at the same moment
 * agree on one owner.
 *
 * A new event that nothing acts on (options.finishAtIntake) is stored finished, with no job: the
 * outcome its fulfilment would have reached, without the job, the row lock and the second write.
 */
export async function claimEvents(db: Kysely<Database>, events: readonly IncomingEvent[], options: ClaimOptions): Promise<ClaimOutcome[]> {
  const unique = [...new Map(events.map((e) => [e.eventId, e])).values()];
  const finishes = unique.map((e) => options.finishAtIntake?.(e));
  // One statement, not begin/insert/add_jobs/commit: under load each round trip waits its turn
  // behind the HTTP work on the event loop, so round trips, not the database, bounded ingest.
  // The bodies go as one bytea parameter, cut apart by offset in SQL, and the other fields as
  // arrays. Bytes, because pg sends a Buffer as is, where a string of the batch would be copied
  // by V8 into its old generation under load. Each body is then read once, by json's input, which
  // checks that it is JSON and keeps its text (sql/0017): a JSON array of the batch would be lexed
  // whole once more.
  // `jobs` sits in the select list so it always runs.
  // Job keys are handed out before the insert knows which ids are new: a job then carries only
  // the claimed events of its key, so it may carry fewer than EVENTS_PER_JOB.
  const keys = jobKeys(unique.length);
  // Only while tracing is on: otherwise the statement writes what it wrote before sql/0033.
  const traced = unique.some((e) => e.traceparent !== undefined);
  const bodyStarts: number[] = [];
  let start = 1; // substring() counts bytes from 1
  for (const e of unique) {
    bodyStarts.push(start);
    start += e.rawBody.length;
  }
  // `happening`: DO UPDATE (a no-op write) rather than DO NOTHING, so that a conflict still
  // returns the owner; one row per snapshot id, or DO UPDATE would touch a row twice.
  // `decided`: a second event of a happening is its duplicate; one that no running release acts
  // on is finished now (finish_status, sql/0031); the rest wait for their job.
  const { rows } = await sql<{ claimed: string[] }>`
    with incoming as (
      select * from unnest(
        ${unique.map((e) => e.eventId)}::text[], ${unique.map((e) => e.type)}::text[], ${unique.map((e) => e.objectId)}::text[],
        ${unique.map((e) => e.livemode)}::boolean[], ${unique.map((e) => e.stripeCreatedAt.toISOString())}::timestamptz[],
        ${keys}::text[], ${bodyStarts}::int[], ${unique.map((e) => e.rawBody.length)}::int[], ${unique.map((e) => e.snapshotEventId)}::text[],
        ${finishes.map((f) => f?.status ?? null)}::text[], ${finishes.map((f) => f?.reason ?? null)}::text[], ${finishes.map((f) => f?.actedOnAs ?? null)}::text[]
        ${traced ? sql`, ${unique.map((e) => e.traceparent ?? null)}::text[]` : sql``}
      ) as incoming(event_id, type, object_id, livemode, stripe_created_at, job_key, body_start, body_length, snapshot_event_id,
                    finish_status, finish_reason, acted_on_as ${traced ? sql`, trace_context` : sql``})
    ), happening as (
      insert into snapshot_claims (snapshot_event_id, event_id)
      select distinct on (snapshot_event_id) snapshot_event_id, event_id from incoming
      where snapshot_event_id is not null
      order by snapshot_event_id, body_start
      on conflict (snapshot_event_id) do update set snapshot_event_id = excluded.snapshot_event_id
      returning snapshot_event_id, event_id as owner
    ), decided as (
      select i.*, h.owner,
             case when h.owner <> i.event_id then 'duplicate'
                  when i.finish_status is not null
                   and not exists (select from event_types_acted_on a where a.event_type = i.acted_on_as) then i.finish_status
                  else 'processing' end as status
      from incoming i left join happening h using (snapshot_event_id)
    ), claimed as (
      insert into stripe_events (event_id, type, object_id, livemode, stripe_created_at, payload, job_key, status, duplicate_of, last_error, finished_at
                                 ${traced ? sql`, trace_context` : sql``})
      select event_id, type, object_id, livemode, stripe_created_at,
             convert_from(substring(${Buffer.concat(unique.map((e) => e.rawBody))}::bytea from body_start for body_length), 'UTF8')::json,
             case when status = 'processing' then job_key end,
             status,
             case when status = 'duplicate' then owner end,
             case when status <> 'duplicate' then finish_reason end,
             case when status <> 'processing' then now() end
             ${traced ? sql`, trace_context` : sql``}
      from decided
      on conflict (event_id) do nothing
      returning event_id, job_key, status
    ), jobs as (
      -- Only when there is a job to add: add_jobs notifies even for none, and a notifying commit
      -- takes a lock every notifying commit of the database waits for (claim-batcher.ts). The
      -- subquery runs only when the CASE reaches it.
      select case when exists (select from claimed where job_key is not null)
        then (select count(*) from ${addEventJobs(sql`select event_id, job_key from claimed where job_key is not null`, options)})
        else 0 end as added
    )
    select array(select event_id from claimed where status <> 'duplicate') as claimed, (select added from jobs) as jobs`.execute(db);
  const claimed = new Set(rows[0]?.claimed);
  // Within one batch the same id twice: the first occurrence owns the claim.
  const seen = new Set<string>();
  return events.map((e) => {
    const first = !seen.has(e.eventId);
    seen.add(e.eventId);
    return first && claimed.has(e.eventId) ? 'claimed' : 'duplicate';
  });
}

/**
 * Locks the event rows for the whole fulfilment transaction. The lock is the liveness signal the
 * sweep relies on (docs/design.md, invariant 7): while a worker holds it, the row cannot be
 * reclaimed, whatever its age; when the worker's connection dies, Postgres releases it. Locked in
 * event id order, so two transactions locking overlapping sets cannot deadlock on them.
 */
export async function lockForFulfilment(tx: Transaction<Database>, eventIds: readonly string[]): Promise<StripeEventRow[]> {
  return tx
    .selectFrom('stripe_events')
    .select(eventColumns())
    .where('event_id', '=', sql<string>`any(${[...eventIds]}::text[])`)
    .orderBy('event_id')
    .forUpdate()
    .execute();
}

/**
 * Commits with the side-effects, in the same transaction (docs/design.md, invariant 6). One
 * statement for all. Only for rows this transaction locked with lockForFulfilment and found
 * 'processing': the lock keeps them so until commit, and the statement does not check their status
 * again, on purpose. A `status = 'processing'` condition matches the partial index of waiting rows,
 * and with statistics taken while the inbox was quiet (the usual case) the planner scans that whole
 * index for each batch: under a backlog, every batch would read every waiting row. The batch's ids
 * as `event_id = any(...)` leave it the primary key, and the batch's rows only.
 */
export async function markFinished(tx: Transaction<Database>, finished: ReadonlyArray<{ eventId: string; outcome: FinishOutcome }>): Promise<void> {
  if (finished.length === 0) return;
  const eventIds = finished.map((f) => f.eventId);
  await sql`
    update stripe_events e set
      status = f.status, duplicate_of = f.duplicate_of, last_error = f.reason, finished_at = now()
    from unnest(
      ${eventIds}::text[], ${finished.map((f) => f.outcome.status)}::text[],
      ${finished.map((f) => (f.outcome.status === 'duplicate' ? f.outcome.duplicateOf : null))}::text[],
      ${finished.map((f) => (f.outcome.status === 'duplicate' ? null : (f.outcome.reason ?? null)))}::text[]
    ) as f(event_id, status, duplicate_of, reason)
    where e.event_id = any(${eventIds}::text[]) and e.event_id = f.event_id`.execute(tx);
}

export interface Failure {
  message: string;
  /** Retrying cannot help: 'failed' now. */
  permanent: boolean;
}

/**
 * Counts a failed attempt. A permanent failure, or the attempt that reaches maxAttempts, ends the
 * event 'failed' (the dead letter); otherwise it stays 'processing' for graphile-worker's backoff.
 * (An event that waits is not failing: event-waits.ts parks it.) Returns the status the row is left
 * in, or undefined when the attempt is no longer the row's to count.
 *
 * `event` is the row as the attempt read it. The attempt counts only while the row is still
 * 'processing' under the same job: a replay or a reclaim since gave it a new job (and a fresh
 * budget), and the old attempt's failure must not spend the new one's, or end it 'failed'.
 */
export async function recordFailure(
  db: Kysely<Database>,
  event: Pick<StripeEventRow, 'event_id' | 'job_key'>,
  failure: Failure,
  options: EnqueueOptions,
): Promise<EventStatus | undefined> {
  const giveUp = sql<boolean>`(${failure.permanent} or attempts + 1 >= ${options.maxAttempts})`;
  const row = await db
    .updateTable('stripe_events')
    .set({
      attempts: sql`attempts + 1`,
      last_error: failure.message.slice(0, 2_000),
      status: sql`case when ${giveUp} then 'failed' else status end`,
      finished_at: sql`case when ${giveUp} then now() else finished_at end`,
    })
    .where('event_id', '=', event.event_id)
    .where('status', '=', 'processing')
    .where('job_key', 'is not distinct from', event.job_key)
    .returning('status')
    .executeTakeFirst();
  return row?.status;
}

/**
 * Ops replay: back to 'processing' with a fresh attempt budget, and enqueued to run now. Safe on
 * any status, because fulfilment is idempotent by business key (docs/design.md, invariant 5).
 * Returns the ids that exist (and were replayed).
 */
export async function replayEvents(db: Kysely<Database>, eventIds: readonly string[], options: EnqueueOptions): Promise<string[]> {
  const ids = [...new Set(eventIds)];
  const { rows } = await sql<{ replayed: string[] }>`
    with replayed as (
      update stripe_events e set
        status = 'processing', attempts = 0, last_error = null, duplicate_of = null, finished_at = null,
        enqueued_at = now(), job_key = r.job_key, waits_for = null, wait_until = null
      from unnest(${ids}::text[], ${jobKeys(ids.length)}::text[]) as r(event_id, job_key)
      where e.event_id = r.event_id
      returning e.event_id, e.job_key
    ), jobs as (
      select count(*) as added from ${addEventJobs(sql`select event_id, job_key from replayed`, options)}
    )
    select array(select event_id from replayed) as replayed, (select added from jobs) as jobs`.execute(db);
  return rows[0]?.replayed ?? [];
}

export async function findEventIds(db: Kysely<Database>, filter: { status: EventStatus; receivedSince?: Date; limit: number }): Promise<string[]> {
  let query = db.selectFrom('stripe_events').select('event_id').where('status', '=', filter.status);
  if (filter.receivedSince) query = query.where('received_at', '>=', filter.receivedSince);
  const rows = await query.orderBy('received_at').limit(filter.limit).execute();
  return rows.map((r) => r.event_id);
}

export async function findEvent(db: Kysely<Database>, eventId: string): Promise<StripeEventRow | undefined> {
  return db.selectFrom('stripe_events').select(eventColumns()).where('event_id', '=', eventId).executeTakeFirst();
}
