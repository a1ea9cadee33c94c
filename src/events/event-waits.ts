// Events that wait for something still to come. Stripe delivers in any order, so an event may
// name what this service has not learnt yet: a dispute or a refund before the checkout that paid,
// a subscription's events before the checkout that links it. Such an event is parked, not
// retried: it names what it waits for (keys such as `payment_intent:pi_…`), spends no attempt
// while it waits, and is run again in the transaction that commits what it waited for. If that
// never comes, it ends when the wait gives up (WAIT_HOURS), 'ignored' or 'failed' with its reason
// (docs/events.md, "Waiting for what comes later"; sql/0026).
//
// The protocol that keeps a wake from being lost between a waiter and a waker (sql/0026 says why
// it works): a handler that may wait on key K calls lockWaitKeys([K]) and only then reads whether
// what it needs exists; a module that writes what K stands for calls wakeWaiting([K]) after the
// write, in the same transaction. A waker holds the rows it wrote until it commits, and takes K
// last: a waiter that needs one of those rows locks it before K, never after, or the two deadlock.
// A waiter and its waker in one transaction (a batch of jobs) are the one case the locks cannot
// order: fulfilment looks at such a waiter again after the commit (fulfil-event.ts).
import { sql, type Transaction } from 'kysely';
import type { Database, EventStatus } from '../db/schema.js';
import { addEventJobs, EVENTS_PER_JOB, newJobKeyPrefix, type EnqueueOptions } from '../queue/job-queue.js';

/**
 * How long an event waits at most, from its first wait: Stripe retries a delivery for up to three
 * days, and the scheduled reconcile claims an event lost meanwhile from its Events API within a
 * RECONCILE_WINDOW_HOURS of 72 by default, so what is still missing after four days is not coming.
 */
export const WAIT_HOURS = 96;

/** What a handler waits for (RetryLaterError), as fulfilment parks it. */
export interface Wait {
  eventId: string;
  /** The keys that wake it: any one of them. */
  keys: readonly string[];
  reason: string;
  /** When the wait gives up: 'ignored' (what it waited for may never have been ours) or 'failed'. */
  ignoreWhenExhausted: boolean;
}

export interface Parked {
  eventId: string;
  /** 'processing' while it waits; 'ignored' or 'failed' once its wait gave up. */
  status: EventStatus;
  /** Its first wait (logged at info; later ones, after a wake that did not help, at debug). */
  first: boolean;
  waitUntil: Date;
}

/**
 * Parks the events, in the fulfilment transaction that holds their row locks (so the wait commits
 * with nothing else: a waiting handler writes nothing). One statement for all. A wait past its
 * deadline ends the event instead. The attempt count is left alone: waiting is not failing.
 */
export async function parkWaiting(tx: Transaction<Database>, waits: readonly Wait[]): Promise<Parked[]> {
  if (waits.length === 0) return [];
  const incoming = JSON.stringify(
    waits.map((w) => ({
      event_id: w.eventId,
      keys: [...new Set(w.keys)].sort(),
      reason: w.reason.slice(0, 2_000),
      final_status: w.ignoreWhenExhausted ? 'ignored' : 'failed',
    })),
  );
  const { rows } = await sql<{ event_id: string; status: EventStatus; first: boolean; wait_until: Date }>`
    with w as (
      select event_id, array(select jsonb_array_elements_text(keys)) as keys, reason, final_status
      from jsonb_to_recordset(${incoming}::jsonb) as w(event_id text, keys jsonb, reason text, final_status text)
    ), before as (
      select e.event_id, e.wait_until, coalesce(e.wait_until <= now(), false) as gave_up
      from stripe_events e where e.event_id in (select event_id from w)
    )
    update stripe_events e set
      waits_for = case when b.gave_up then null else w.keys end,
      wait_until = coalesce(e.wait_until, now() + make_interval(hours => ${WAIT_HOURS})),
      status = case when b.gave_up then w.final_status else e.status end,
      finished_at = case when b.gave_up then now() else e.finished_at end,
      last_error = case when b.gave_up
        then 'gave up waiting after ' || ${WAIT_HOURS} || ' h: ' || w.reason
        else w.reason end
    from w join before b using (event_id)
    where e.event_id = w.event_id
    returning e.event_id, e.status, b.wait_until is null as first, e.wait_until`.execute(tx);
  const byId = new Map(rows.map((row) => [row.event_id, row]));
  return waits.map((w) => {
    const row = byId.get(w.eventId)!;
    return { eventId: w.eventId, status: row.status, first: row.first, waitUntil: row.wait_until };
  });
}

/**
 * Before reading whether what an event needs exists: the keys it would wait for, locked until the
 * transaction ends, so that the module that writes it cannot slip its wake in between the read and
 * the wait's commit. Only on the path that may wait: a lookup that finds what it needs pays nothing.
 */
export async function lockWaitKeys(tx: Transaction<Database>, keys: readonly string[]): Promise<void> {
  await sql`select stripe_inbox_lock_wait_keys(${[...keys]}::text[])`.execute(tx);
}

/** wakeWaiting as a module is given it (src/business-module.ts): the enqueue options bound. */
export type Wake = (tx: Transaction<Database>, keys: readonly string[]) => Promise<string[]>;

export function waker(options: EnqueueOptions): Wake {
  return (tx, keys) => wakeWaiting(tx, keys, options);
}

/**
 * After writing what `keys` stand for (an order paid by a PaymentIntent, a subscription linked):
 * wakes the events waiting for any of them, in the caller's transaction, so they run as soon as it
 * commits. One statement when nobody waits (the usual case); a second enqueues the woken. A
 * waiting row another transaction holds is passed over: that transaction runs, re-enqueues or ends
 * the event itself, and waiting for it could deadlock (sql/0032).
 */
export async function wakeWaiting(tx: Transaction<Database>, keys: readonly string[], options: EnqueueOptions): Promise<string[]> {
  if (keys.length === 0) return [];
  const { rows } = await sql<{ event_id: string; job_key: string }>`
    select woken_event_id as event_id, woken_job_key as job_key
    from stripe_inbox_wake_events(${[...keys]}::text[], ${newJobKeyPrefix()}, ${EVENTS_PER_JOB})`.execute(tx);
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.event_id);
  await sql`select count(*) from ${addEventJobs(sql`select * from unnest(${ids}::text[], ${rows.map((r) => r.job_key)}::text[])`, options)}`.execute(tx);
  return ids;
}
