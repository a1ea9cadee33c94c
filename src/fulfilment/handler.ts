// The handler contract (docs/handlers.md): what a business module gives the fulfilment loop for an
// event type. A handler runs inside the transaction that finishes the event's row, so whatever it
// writes commits together with the status it returns, or not at all (DESIGN invariants 2 and 6).
import type { Transaction } from 'kysely';
import type { Database, StripeEventRow } from '../db/schema.js';
import type { FinishOutcome } from '../events/event-store.js';

/**
 * Handles one event. `tx` is the fulfilment transaction, with the event's row locked; the outcome
 * is the status the row ends in: 'processed', 'ignored' (nothing for this module to do, with a
 * reason when an operator may wonder) or 'duplicate' of the event that already produced the effect. Throw a PermanentError when retrying
 * cannot help, a RetryLaterError when the event waits for another; any other error is transient.
 */
export type EventHandler = (tx: Transaction<Database>, event: StripeEventRow) => Promise<FinishOutcome>;

/**
 * Handles all events of its types in a job's batch at once (one statement for all, where one per
 * event would cost a round trip each). One result per event, in order: its outcome, or the Error
 * it failed with. Throwing fails them all.
 */
export type BatchHandler = (tx: Transaction<Database>, events: readonly StripeEventRow[]) => Promise<Array<FinishOutcome | Error>>;

export type Handler = EventHandler | { readonly batch: BatchHandler };

/** A module's handlers by event type. Types no module lists are stored and end 'ignored'. */
export type Handlers = Readonly<Record<string, Handler>>;

/**
 * For a type that only tells us what we already know or will learn from the type that fulfils
 * (payment_intent.succeeded beside checkout.session.completed): stored for the audit trail and
 * 'processed', never acted on. Acting on both would grant twice.
 */
export const recordOnly: EventHandler = () => Promise.resolve({ status: 'processed' });

/**
 * Retrying can never make this event succeed (an unknown order, an amount mismatch, a payload
 * that will never parse): it ends 'failed' at once with this message, a dead letter to replay
 * after fixing the cause.
 */
export class PermanentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/**
 * The event depends on something that has not happened yet (a refund before the payment it
 * refunds was fulfilled): retried with backoff, like any transient error, never dropped. Thrown
 * before the handler writes anything: where several modules handle the type, another module's
 * outcome wins over a RetryLaterError and the transaction commits (docs/handlers.md).
 *
 * `ignoreWhenExhausted`: what the event waits for may never come (a refund of a payment that is
 * not ours); when the attempts run out it ends 'ignored' with this message, not 'failed'.
 */
export class RetryLaterError extends Error {
  readonly ignoreWhenExhausted: boolean;

  constructor(message: string, options: { ignoreWhenExhausted?: boolean } = {}) {
    super(message);
    this.name = 'RetryLaterError';
    this.ignoreWhenExhausted = options.ignoreWhenExhausted ?? false;
  }
}
