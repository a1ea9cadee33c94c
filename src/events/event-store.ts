// Every status change of stripe_events is a named function here: claim, lock for fulfilment,
// finish, record a failure, replay. The route, the task, the sweep and the scripts call these;
// none of them carries its own UPDATE. The state machine itself is enforced by CHECK
// constraints in sql/0001 (a finished row has finished_at, a failed row has last_error, ...).
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, EventStatus, StripeEventRow } from '../db/schema.js';
import { enqueueEvents } from './enqueue.js';

/** A verified delivery, reduced to what the inbox stores. */
export interface IncomingEvent {
  readonly eventId: string;
  readonly type: string;
  readonly objectId: string | null;
  readonly livemode: boolean;
  readonly stripeCreatedAt: Date;
  /** The exact body Stripe signed: stored as is, never parsed and re-serialised. */
  readonly rawBody: string;
}

export type ClaimOutcome = 'claimed' | 'duplicate';

export interface EventQueueOptions {
  maxAttempts: number;
}

/**
 * Claims each event id and enqueues its job in one transaction (DESIGN invariants 1 and 3): when
 * this resolves, every event is durable together with the means to process it. An id that is
 * already stored (a retry, a concurrent delivery, a resend) is 'duplicate' and gets no job.
 * Concurrent claims of one id do not fail: ON CONFLICT waits for the other transaction and
 * then does nothing, so a second delivery never sees an error (an error would be a 5xx and
 * another retry). Takes a batch so deliveries arriving together can share one commit.
 */
export async function claimEvents(
  db: Kysely<Database>,
  events: readonly IncomingEvent[],
  options: EventQueueOptions,
): Promise<ClaimOutcome[]> {
  const unique = [...new Map(events.map((e) => [e.eventId, e])).values()];
  const claimed = await db.transaction().execute(async (tx) => {
    const { rows } = await sql<{ event_id: string }>`
      insert into stripe_events (event_id, type, object_id, livemode, stripe_created_at, payload)
      select event_id, type, object_id, livemode, stripe_created_at, payload::jsonb
      from unnest(
        ${unique.map((e) => e.eventId)}::text[], ${unique.map((e) => e.type)}::text[],
        ${unique.map((e) => e.objectId)}::text[], ${unique.map((e) => e.livemode)}::boolean[],
        ${unique.map((e) => e.stripeCreatedAt)}::timestamptz[], ${unique.map((e) => e.rawBody)}::text[]
      ) as incoming(event_id, type, object_id, livemode, stripe_created_at, payload)
      on conflict (event_id) do nothing
      returning event_id`.execute(tx);
    const ids = rows.map((r) => r.event_id);
    await enqueueEvents(tx, ids, { maxAttempts: options.maxAttempts, preserveRunAt: false });
    return new Set(ids);
  });
  // Within one batch the same id twice: the first occurrence owns the claim.
  const seen = new Set<string>();
  return events.map((e) => {
    const first = !seen.has(e.eventId);
    seen.add(e.eventId);
    return first && claimed.has(e.eventId) ? 'claimed' : 'duplicate';
  });
}

/**
 * Locks the event row for the whole fulfilment transaction. The lock is the liveness signal
 * the sweep relies on (DESIGN invariant 7): while a worker holds it, the row cannot be
 * reclaimed, whatever its age; when the worker's connection dies, Postgres releases it.
 */
export async function lockForFulfilment(tx: Transaction<Database>, eventId: string): Promise<StripeEventRow | undefined> {
  return tx.selectFrom('stripe_events').selectAll().where('event_id', '=', eventId).forUpdate().executeTakeFirst();
}

export type FinishOutcome = { status: 'processed' | 'ignored' } | { status: 'duplicate'; duplicateOf: string };

/** Commits with the side-effect, in the same transaction (DESIGN invariant 6). */
export async function markFinished(tx: Transaction<Database>, eventId: string, outcome: FinishOutcome): Promise<void> {
  await tx
    .updateTable('stripe_events')
    .set({
      status: outcome.status,
      duplicate_of: outcome.status === 'duplicate' ? outcome.duplicateOf : null,
      last_error: null,
      finished_at: sql<Date>`now()`,
    })
    .where('event_id', '=', eventId)
    .where('status', '=', 'processing')
    .execute();
}

/**
 * Counts a failed attempt. A permanent failure, or the attempt that reaches maxAttempts, ends the
 * event 'failed' (the dead letter); otherwise it stays 'processing' for graphile-worker's backoff.
 * Returns the status the row is left in.
 */
export async function recordFailure(
  db: Kysely<Database>,
  eventId: string,
  failure: { message: string; permanent: boolean },
  options: EventQueueOptions,
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
    .where('event_id', '=', eventId)
    .where('status', '=', 'processing')
    .returning('status')
    .executeTakeFirst();
  return row?.status;
}

/**
 * Ops replay: back to 'processing' with a fresh attempt budget, and enqueued to run now. Safe on
 * any status, because fulfilment is idempotent by business key (DESIGN invariant 5).
 * Returns the ids that exist (and were replayed).
 */
export async function replayEvents(db: Kysely<Database>, eventIds: readonly string[], options: EventQueueOptions): Promise<string[]> {
  return db.transaction().execute(async (tx) => {
    const rows = await tx
      .updateTable('stripe_events')
      .set({ status: 'processing', attempts: 0, last_error: null, duplicate_of: null, finished_at: null, enqueued_at: sql<Date>`now()` })
      .where('event_id', 'in', eventIds.length > 0 ? [...eventIds] : [''])
      .returning('event_id')
      .execute();
    const ids = rows.map((r) => r.event_id);
    await enqueueEvents(tx, ids, { maxAttempts: options.maxAttempts, preserveRunAt: false });
    return ids;
  });
}

export async function findEvent(db: Kysely<Database>, eventId: string): Promise<StripeEventRow | undefined> {
  return db.selectFrom('stripe_events').selectAll().where('event_id', '=', eventId).executeTakeFirst();
}
