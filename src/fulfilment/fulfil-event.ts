// Fulfils one stored event: lock its row, run the handler for its type, and commit the
// side-effect together with the status flip (DESIGN invariants 2 and 6). This is the one wrapper
// that turns a PermanentError into 'failed' and leaves everything else to graphile-worker's
// backoff, with the attempt counted on the event row either way.
import type { Kysely } from 'kysely';
import type { Database, EventStatus, StripeEventRow } from '../db/schema.js';
import { lockForFulfilment, markFinished, recordFailure, type EventQueueOptions } from '../events/event-store.js';
import { describeError, PermanentError } from './errors.js';
import type { Dispatch } from './handlers.js';

export type FulfilResult =
  | { status: 'missing' | 'already_finished' }
  | { status: EventStatus; type: string; attempt: number; receivedAt: Date; error?: Error };

export interface FulfilOptions extends EventQueueOptions {
  dispatch: Dispatch;
}

/** Carries a handler's error out of its transaction, so the rollback happens first. */
class HandlerFailed extends Error {
  constructor(
    readonly event: StripeEventRow,
    readonly error: unknown,
  ) {
    super(describeError(error), { cause: error });
  }
}

export async function fulfilEvent(db: Kysely<Database>, eventId: string, options: FulfilOptions): Promise<FulfilResult> {
  try {
    return await db.transaction().execute(async (tx): Promise<FulfilResult> => {
      // Held until commit: the sweep skips locked rows, so a live worker is never reclaimed.
      const event = await lockForFulfilment(tx, eventId);
      if (!event) return { status: 'missing' };
      // A second job for a finished event (a replay that raced, a reclaimed job whose first run
      // committed late) finds nothing to do.
      if (event.status !== 'processing') return { status: 'already_finished' };
      try {
        const outcome = await options.dispatch(tx, event);
        await markFinished(tx, eventId, outcome);
        return { status: outcome.status, type: event.type, attempt: event.attempts + 1, receivedAt: event.received_at };
      } catch (error) {
        throw new HandlerFailed(event, error);
      }
    });
  } catch (failure) {
    if (!(failure instanceof HandlerFailed)) throw failure;
    return recordFailedAttempt(db, failure.event, failure.error, options);
  }
}

/**
 * The handler's writes are rolled back with the rest of its transaction; the attempt is then
 * counted on its own. Between the two the row lock is not held, which is safe: the job is still
 * locked by this worker, so the sweep leaves the row alone, and recordFailure only touches a row
 * still 'processing'. (A savepoint would keep the lock, at one more round trip per event.)
 */
async function recordFailedAttempt(db: Kysely<Database>, event: StripeEventRow, error: unknown, options: FulfilOptions): Promise<FulfilResult> {
  const permanent = error instanceof PermanentError;
  const status = await recordFailure(db, event.event_id, { message: describeError(error), permanent }, options);
  return {
    status: status ?? 'processing',
    type: event.type,
    attempt: event.attempts + 1,
    receivedAt: event.received_at,
    error: error instanceof Error ? error : new Error(describeError(error)),
  };
}
