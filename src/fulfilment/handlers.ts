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
import { fulfilCheckoutSession } from './checkout-session-paid.js';

export type EventHandler = (tx: Transaction<Database>, event: StripeEventRow) => Promise<FinishOutcome>;

// payment_intent.succeeded and charge.succeeded fire for the same payment as the checkout
// session; treating them as a second cashier would grant twice. They are recorded, not acted on.
const telemetry: EventHandler = () => Promise.resolve({ status: 'processed' });

export const HANDLERS: Readonly<Record<string, EventHandler>> = Object.freeze({
  'checkout.session.completed': fulfilCheckoutSession,
  'checkout.session.async_payment_succeeded': fulfilCheckoutSession,
  'checkout.session.async_payment_failed': telemetry,
  'checkout.session.expired': telemetry,
  'payment_intent.succeeded': telemetry,
  'charge.succeeded': telemetry,
});

export async function dispatch(tx: Transaction<Database>, event: StripeEventRow): Promise<FinishOutcome> {
  const handler = HANDLERS[event.type];
  return handler ? handler(tx, event) : { status: 'ignored' };
}

