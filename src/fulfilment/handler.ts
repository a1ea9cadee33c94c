// The handler contract (docs/handlers.md): what a business module gives the fulfilment loop for an
// event type. A handler runs inside the transaction that finishes the event's row, so whatever it
// writes commits together with the status it returns, or not at all (docs/design.md,
// invariants 2 and 6).
import type { Transaction } from 'kysely';
import type { Database, StripeEventRow } from '../db/schema.js';
import type { FinishOutcome } from '../outcomes.js';

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
