// Fulfils one stored event: lock its row, run the handler for its type, and commit the
// side-effect together with the status flip (DESIGN invariants 2 and 6). This is the one wrapper
// that turns a PermanentError into 'failed' and leaves everything else to graphile-worker's
// backoff, with the attempt counted on the event row either way.
import { sql, type Kysely } from 'kysely';
import type { Database, EventStatus } from '../db/schema.js';
import { lockForFulfilment, markFinished, recordFailure, type EventQueueOptions } from '../events/event-store.js';
import { describeError, PermanentError } from './errors.js';
import type { Dispatch } from './handlers.js';

export type FulfilResult =
  | { status: 'missing' | 'already_finished' }
  | { status: EventStatus; type: string; attempt: number; receivedAt: Date; error?: Error };

export interface FulfilOptions extends EventQueueOptions {
  dispatch: Dispatch;
}

export async function fulfilEvent(db: Kysely<Database>, eventId: string, options: FulfilOptions): Promise<FulfilResult> {
  return db.transaction().execute(async (tx): Promise<FulfilResult> => {
    // Held until commit: the sweep skips locked rows, so a live worker is never reclaimed.
    const event = await lockForFulfilment(tx, eventId);
    if (!event) return { status: 'missing' };
    // A second job for a finished event (a replay that raced, a reclaimed job whose first run
    // committed late) finds nothing to do.
    if (event.status !== 'processing') return { status: 'already_finished' };

    // The handler's writes roll back to here on failure while the row lock stays held, so the
    // failure is recorded by the same transaction that owned the attempt.
    await sql`savepoint fulfil`.execute(tx);
    try {
      const outcome = await options.dispatch(tx, event);
      await markFinished(tx, eventId, outcome);
      return { status: outcome.status, type: event.type, attempt: event.attempts + 1, receivedAt: event.received_at };
    } catch (error) {
      await sql`rollback to savepoint fulfil`.execute(tx);
      const permanent = error instanceof PermanentError;
      const status = await recordFailure(tx, eventId, { message: describeError(error), permanent }, options);
      return {
        status: status ?? 'processing',
        type: event.type,
        attempt: event.attempts + 1,
        receivedAt: event.received_at,
        error: error instanceof Error ? error : new Error(describeError(error)),
      };
    }
  });
}
