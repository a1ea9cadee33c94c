// Event type → handler. Types not listed are stored and end 'ignored': we answer Stripe 2xx for
// them too (a 4xx would make Stripe retry for three days).
//
// Once-per-object types (DESIGN invariant 4): checkout.session.completed and
// checkout.session.async_payment_succeeded. A second Event object for the same session must not
// fulfil twice; the business key (the order's grant) decides, not the event, and the second ends
// 'duplicate' (docs/events.md). Types that repeat for one object
// (customer.subscription.updated, invoice.payment_failed, partial charge.refunded) are never
// collapsed: each Event object is its own row and runs its handler.
import type { Transaction } from 'kysely';
import type { Database, StripeEventRow } from '../db/schema.js';
import type { FinishOutcome } from '../events/event-store.js';
import { chargeRefunded } from './charge-refunded.js';
import { fulfilCheckoutSessions } from './checkout-session-paid.js';
import type { RefundPolicy } from './credit-revocations.js';
import { HandlerFailed, PermanentError } from './errors.js';

export type EventHandler = (tx: Transaction<Database>, event: StripeEventRow) => Promise<FinishOutcome>;
/**
 * Handles all events of its types in a batch at once (one statement for all, where one per event
 * would cost a round trip each). One result per event, in order; an Error for an event that
 * failed. Throwing fails them all.
 */
export type BatchHandler = (tx: Transaction<Database>, events: readonly StripeEventRow[]) => Promise<Array<FinishOutcome | Error>>;

/**
 * Runs the handlers for a batch of events in one transaction and returns their outcomes, in order.
 * A failure it can pin on one event throws HandlerFailed for that event; any other error (a batch
 * statement failing for several events) is thrown as is. Either way the caller rolls back.
 */
export type Dispatch = (tx: Transaction<Database>, events: readonly StripeEventRow[]) => Promise<FinishOutcome[]>;

// payment_intent.succeeded and charge.succeeded fire for the same payment as the checkout
// session; treating them as a second cashier would grant twice. They are recorded, not acted on.
const telemetry: EventHandler = () => Promise.resolve({ status: 'processed' });
const ignored: EventHandler = () => Promise.resolve({ status: 'ignored' });

export interface DispatchOptions {
  /** The mode of our Stripe key: an event of the other mode never acts here. */
  livemode: boolean;
  refundPolicy: RefundPolicy;
}

export function createDispatch({ livemode, refundPolicy }: DispatchOptions): Dispatch {
  const batchHandlers: Readonly<Record<string, BatchHandler>> = {
    'checkout.session.completed': fulfilCheckoutSessions,
    'checkout.session.async_payment_succeeded': fulfilCheckoutSessions,
  };
  const handlers: Readonly<Record<string, EventHandler>> = {
    'checkout.session.async_payment_failed': telemetry,
    'checkout.session.expired': telemetry,
    'payment_intent.succeeded': telemetry,
    'charge.succeeded': telemetry,
    'charge.refunded': chargeRefunded(refundPolicy),
  };
  return async (tx, events) => {
    const outcomes = new Map<StripeEventRow, FinishOutcome>();
    // In list order, except that a batch handler takes all of its events at the first of them
    // (payments before a refund of the same batch, which is also the order Stripe's happen in).
    for (const event of events) {
      if (outcomes.has(event)) continue;
      // A test-mode event reaching a live service (or the reverse) is a misconfigured endpoint or
      // secret: it must never grant. It ends 'failed', visible in status, instead of being
      // answered 4xx, which Stripe would retry for three days.
      if (event.livemode !== livemode) {
        throw new HandlerFailed(event, new PermanentError(`livemode mismatch: a ${event.livemode ? 'live' : 'test'}-mode event reached a ${livemode ? 'live' : 'test'}-mode service`));
      }
      const batch = batchHandlers[event.type];
      if (!batch) {
        try {
          outcomes.set(event, await (handlers[event.type] ?? ignored)(tx, event));
        } catch (error) {
          throw new HandlerFailed(event, error);
        }
        continue;
      }
      const group = events.filter((e) => batchHandlers[e.type] === batch && e.livemode === livemode && !outcomes.has(e));
      let results: Array<FinishOutcome | Error>;
      try {
        results = await batch(tx, group);
      } catch (error) {
        if (group.length === 1) throw new HandlerFailed(event, error);
        throw error;
      }
      for (const [i, member] of group.entries()) {
        const result = results[i]!;
        if (result instanceof Error) throw new HandlerFailed(member, result);
        outcomes.set(member, result);
      }
    }
    return events.map((event) => outcomes.get(event)!);
  };
}
