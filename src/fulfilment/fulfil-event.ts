// Fulfils stored events, one or a job's batch: lock their rows, run the handler for each type, and
// commit the side-effects together with the status flips (docs/design.md, invariants 2 and 6). A
// batch that fails is never recorded as such: each of its events is then fulfilled alone. This is
// the one wrapper that turns a PermanentError into 'failed' and leaves everything else to
// graphile-worker's backoff, with the attempt counted on the event row either way.
import type { Kysely, Transaction } from 'kysely';
import { isDatabaseUnavailable, isNumericValueOutOfRange, isTransactionConflict } from '../db/pg-errors.js';
import type { Database, EventStatus, StripeEventRow } from '../db/schema.js';
import { lockForFulfilment, markFinished, recordFailure } from '../events/event-store.js';
import { parkWaiting } from '../events/event-waits.js';
import type { EnqueueOptions } from '../queue/job-queue.js';
import { describeError, PermanentError, RetryLaterError, type FinishOutcome } from '../outcomes.js';
import { GENERATION_FAILURE_TYPE, snapshotTypeOf } from '../stripe/thin-events.js';
import { linkActiveSpan, tracingOn } from '../tracing/trace-context.js';
import { HandlerError, type Dispatch } from './dispatch.js';
import type { FetchThin } from './thin-fetch.js';

type Fetched = Awaited<ReturnType<FetchThin>>;

export type FulfilResult =
  { status: 'missing' | 'already_finished' } | { status: EventStatus; type: string; attempt: number; receivedAt: Date; error?: Error; wait?: WaitResult };

/** An event that waited (RetryLaterError): parked ('processing'), or ended because its wait gave up. */
interface WaitResult {
  reason: string;
  /** Its first wait: told once, at info. */
  first: boolean;
  until: Date;
}

export interface FulfilOptions extends EnqueueOptions {
  dispatch: Dispatch;
  /** Fetches what a thin notification's handlers read (thin-fetch.ts); without it, thin events wait. */
  fetchThin?: FetchThin;
}

/**
 * Thrown inside the fulfilment transaction when thin notifications due in it need their objects
 * fetched first: it rolls back, having written nothing, and the fetch happens with no transaction
 * open and no row locked, however long Stripe takes.
 */
class FetchFirst extends Error {
  constructor(readonly events: readonly StripeEventRow[]) {
    super('thin notifications to fetch before fulfilment');
  }
}

/**
 * Fulfils one event: its effect and its status change commit together, or neither does and the
 * failed attempt is counted (a PermanentError, or the last attempt, ends it 'failed').
 */
export async function fulfilEvent(db: Kysely<Database>, eventId: string, options: FulfilOptions): Promise<FulfilResult> {
  for (let tries = 1; ; tries++) {
    try {
      const [result] = await fulfilTogether(db, [eventId], options);
      return result!;
    } catch (failure) {
      const error = failure instanceof HandlerError ? failure.error : failure;
      // Chosen as a deadlock's victim (two instances' batches locking one subscription's rows in
      // opposite orders): the event is not at fault, and an attempt spent on it could end a
      // subscription's first event 'failed' under a small MAX_ATTEMPTS. Nothing was written.
      if (isTransactionConflict(error) && tries < CONFLICT_TRIES) continue;
      if (!(failure instanceof HandlerError)) throw failure;
      return recordFailedAttempt(db, failure.event, failure.error, options);
    }
  }
}

/** Runs of one event that lost a lock cycle before the loss counts as an attempt. */
const CONFLICT_TRIES = 3;

/**
 * Fulfils a job's events (src/queue/job-queue.ts) in one transaction: one lock statement, each
 * handler, one finish statement, one commit. If that fails — a handler threw, or two batches
 * deadlocked on the same order — it was rolled back as a whole, and each event is then fulfilled
 * alone, so a failure is recorded against the one event that failed. A database that is away
 * rejects: the job's retry is the next try.
 */
export async function fulfilEvents(db: Kysely<Database>, eventIds: readonly string[], options: FulfilOptions): Promise<FulfilResult[]> {
  if (eventIds.length > 1) {
    let together: FulfilResult[] | undefined;
    try {
      together = await fulfilTogether(db, eventIds, options);
    } catch (error) {
      if (!(error instanceof HandlerError) && isDatabaseUnavailable(error)) throw error;
    }
    if (together) return lookAgainIfParked(db, eventIds, together, options);
  }
  const results: FulfilResult[] = [];
  for (const eventId of eventIds) results.push(await fulfilEvent(db, eventId, options));
  return results;
}

/**
 * An event parked by a transaction that also wrote what it waits for (its waker's event in the
 * same batch, run after it) was woken by nobody: the wake ran before the wait was written. Each
 * such event looks once more, alone, now that the batch has committed: it finds what it waited for,
 * or parks again (then its first wait is what is reported). Waits are rare, so is this pass.
 */
async function lookAgainIfParked(db: Kysely<Database>, eventIds: readonly string[], results: FulfilResult[], options: FulfilOptions): Promise<FulfilResult[]> {
  const parked = (result: FulfilResult) => 'wait' in result && result.wait !== undefined && result.status === 'processing';
  if (!results.some(parked)) return results;
  return Promise.all(
    results.map(async (result, i) => {
      if (!parked(result)) return result;
      const again = await fulfilEvent(db, eventIds[i]!, options);
      return 'wait' in again && again.wait !== undefined && again.status === 'processing' ? result : again;
    }),
  );
}

/**
 * Fulfils the events in one transaction; the thin notifications among them first have their
 * objects fetched (outside it). A fetch that fails counts an attempt against its own event
 * (a 404 ends it 'failed', anything else waits for the retry), and the others go on without it.
 */
async function fulfilTogether(db: Kysely<Database>, eventIds: readonly string[], options: FulfilOptions): Promise<FulfilResult[]> {
  try {
    return await fulfilLocked(db, eventIds, options, new Map());
  } catch (error) {
    if (!(error instanceof FetchFirst)) throw error;
    const fetched = new Map<string, Fetched>();
    const failed = new Map<string, FulfilResult>();
    const { fetchThin } = options;
    await Promise.all(
      error.events.map(async (event) => {
        try {
          if (!fetchThin) throw new Error('thin events are not fetched by this process');
          fetched.set(event.event_id, await fetchThin(event));
        } catch (fetchError) {
          failed.set(event.event_id, await recordFailedAttempt(db, event, fetchError, options));
        }
      }),
    );
    const rest = eventIds.filter((eventId) => !failed.has(eventId));
    const results = rest.length === 0 ? [] : await fulfilLocked(db, rest, options, fetched);
    let next = 0;
    const reported = new Set<string>();
    return eventIds.map((eventId) => {
      const failure = failed.get(eventId);
      if (!failure) return results[next++]!;
      // As in fulfilLocked: a repeat of the id in the batch found nothing to do.
      if (reported.has(eventId)) return { status: 'already_finished' };
      reported.add(eventId);
      return failure;
    });
  }
}

async function fulfilLocked(
  db: Kysely<Database>,
  eventIds: readonly string[],
  options: FulfilOptions,
  fetched: ReadonlyMap<string, Fetched>,
): Promise<FulfilResult[]> {
  return db.transaction().execute(async (tx) => {
    // Held until commit: the sweep skips locked rows, so a live worker is never reclaimed.
    const rows = new Map((await lockForFulfilment(tx, eventIds)).map((event) => [event.event_id, event]));
    if (tracingOn()) linkActiveSpan([...rows.values()].map((event) => event.trace_context ?? null));
    // A second job for a finished event (a replay that raced, a reclaimed job whose first run
    // committed late, or the same event twice in this very batch) finds nothing to do.
    const due = new Map<string, StripeEventRow>();
    for (const eventId of eventIds) {
      const event = rows.get(eventId);
      if (event?.status === 'processing' && !due.has(eventId)) due.set(eventId, event);
    }
    const events = [...due.values()];
    const toFetch = events.filter(
      (event) => !fetched.has(event.event_id) && (event.type === GENERATION_FAILURE_TYPE || options.dispatch.handles(snapshotTypeOf(event.type) ?? '')),
    );
    if (toFetch.length > 0) throw new FetchFirst(toFetch);
    const outcomes = await dispatchFetched(tx, events, fetched, options.dispatch);
    // The handlers are done with the payloads. Let go of them now and each batch's parsed payloads
    // die young; kept through the finish statement and the commit, under load they lived long
    // enough to be copied into V8's old generation, and that set the pace of full collections in a
    // process that also answers webhooks (docs/speed.md).
    for (const event of events) event.payload = null;
    const finished = events.flatMap((event, i) => {
      const outcome = outcomes[i]!;
      return outcome instanceof RetryLaterError ? [] : [{ eventId: event.event_id, outcome }];
    });
    await markFinished(tx, finished);
    // Waiting is not failing: parked in this transaction, which holds the lock the handler read
    // under (event-waits.ts), with its attempts untouched.
    const waits = events.flatMap((event, i) => {
      const outcome = outcomes[i]!;
      return outcome instanceof RetryLaterError
        ? [{ eventId: event.event_id, keys: outcome.waitsFor, reason: outcome.message, ignoreWhenExhausted: outcome.ignoreWhenExhausted, error: outcome }]
        : [];
    });
    const parked = new Map((await parkWaiting(tx, waits)).map((p, i) => [p.eventId, { ...p, error: waits[i]!.error }]));
    const results = new Map(
      events.map((event, i): [StripeEventRow, FulfilResult] => {
        const base = { type: event.type, attempt: event.attempts + 1, receivedAt: event.received_at };
        const wait = parked.get(event.event_id);
        if (!wait) return [event, { ...base, status: (outcomes[i] as FinishOutcome).status }];
        return [event, { ...base, status: wait.status, error: wait.error, wait: { reason: wait.error.message, first: wait.first, until: wait.waitUntil } }];
      }),
    );
    // The first occurrence of an id carries its result; a repeat found nothing to do.
    const reported = new Set<string>();
    return eventIds.map((eventId): FulfilResult => {
      const event = rows.get(eventId);
      if (!event) return { status: 'missing' };
      const result = reported.has(eventId) ? undefined : results.get(event);
      reported.add(eventId);
      return result ?? { status: 'already_finished' };
    });
  });
}

/** The handlers' outcomes, in order, beside those a fetch already settled (an alert of a type no module acts on). */
async function dispatchFetched(
  tx: Transaction<Database>,
  events: readonly StripeEventRow[],
  fetched: ReadonlyMap<string, Fetched>,
  dispatch: Dispatch,
): Promise<Array<FinishOutcome | RetryLaterError>> {
  const ready = events.map((event) => fetched.get(event.event_id) ?? event);
  const dispatched = await dispatch.run(
    tx,
    ready.filter((item): item is StripeEventRow => !('finish' in item)),
  );
  let next = 0;
  return ready.map((item) => ('finish' in item ? item.finish : dispatched[next++]!));
}

/**
 * The handler's writes are rolled back with the rest of its transaction; the attempt is then
 * counted on its own. Between the two the row lock is not held: a replay, or a sweep that judged
 * the job stale, may take the row meanwhile, and recordFailure then leaves it to its new job (it
 * counts only a row still 'processing' under the job this attempt read). (A savepoint would keep
 * the lock, at one more round trip per event.)
 */
async function recordFailedAttempt(db: Kysely<Database>, event: StripeEventRow, thrown: unknown, options: FulfilOptions): Promise<FulfilResult> {
  const error = permanentIfOutOfRange(thrown);
  const failure = { message: describeError(error), permanent: error instanceof PermanentError };
  const status = await recordFailure(db, event, failure, options);
  return {
    status: status ?? 'processing',
    type: event.type,
    attempt: event.attempts + 1,
    receivedAt: event.received_at,
    error: error instanceof Error ? error : new Error(describeError(error)),
  };
}

/**
 * A number that outgrew its column (a grant past what an account's integer balance holds) fails
 * the same way on every attempt: a PermanentError that names it, not ten retries over hours.
 */
function permanentIfOutOfRange(error: unknown): unknown {
  if (error instanceof PermanentError || !isNumericValueOutOfRange(error)) return error;
  return new PermanentError(
    'numeric_value_out_of_range (SQLSTATE 22003): a balance or count would exceed what its integer column holds (at most 2147483647); retrying cannot help',
    { cause: error },
  );
}
