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
import { fulfilCheckoutSession } from './checkout-session-paid.js';
import type { RefundPolicy } from './credit-revocations.js';
import { PermanentError } from './errors.js';

export type EventHandler = (tx: Transaction<Database>, event: StripeEventRow) => Promise<FinishOutcome>;

// payment_intent.succeeded and charge.succeeded fire for the same payment as the checkout
// session; treating them as a second cashier would grant twice. They are recorded, not acted on.
const telemetry: EventHandler = () => Promise.resolve({ status: 'processed' });

export interface DispatchOptions {
  /** The mode of our Stripe key: an event of the other mode never acts here. */
  livemode: boolean;
  refundPolicy: RefundPolicy;
}

export type Dispatch = EventHandler;

export function createDispatch({ livemode, refundPolicy }: DispatchOptions): Dispatch {
  const handlers: Readonly<Record<string, EventHandler>> = {
    'checkout.session.completed': fulfilCheckoutSession,
    'checkout.session.async_payment_succeeded': fulfilCheckoutSession,
    'checkout.session.async_payment_failed': telemetry,
    'checkout.session.expired': telemetry,
    'payment_intent.succeeded': telemetry,
    'charge.succeeded': telemetry,
    'charge.refunded': chargeRefunded(refundPolicy),
  };
  return (tx, event) => {
    // A test-mode event reaching a live service (or the reverse) is a misconfigured endpoint or
    // secret: it must never grant. It ends 'failed', visible in status, instead of being
    // answered 4xx, which Stripe would retry for three days.
    if (event.livemode !== livemode) {
      throw new PermanentError(`livemode mismatch: a ${event.livemode ? 'live' : 'test'}-mode event reached a ${livemode ? 'live' : 'test'}-mode service`);
    }
    const handler = handlers[event.type];
    return handler ? handler(tx, event) : Promise.resolve({ status: 'ignored' });
  };
}

