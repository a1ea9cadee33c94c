// Waiting for a payment: a dispute or a refund can name a PaymentIntent before the payment's own
// event has linked it to a purchase of ours (Stripe retrying that event after an outage, reconcile
// claiming it after a failover lost it, or a test card's dispute seconds after the payment). The
// waiter parks on paymentWaitKey; the module that records the payment wakes that key.
import type { Transaction } from 'kysely';
import { payloadHolds, type Database } from '../../business-module.js';

/**
 * The key a wait for a payment is woken by: what an event waits for when it names a PaymentIntent
 * no purchase of ours is known to be paid by yet. The module that records such a payment wakes it.
 */
export const paymentWaitKey = (paymentIntent: string) => `payment_intent:${paymentIntent}`;

// Where a payment's own events name its PaymentIntent: a Checkout Session, an invoice payment
// (invoice_payment.paid), an invoice (its payments, or at its top level before 2025-03-31).
const PAYMENT_INTENT_PATHS = [
  ['data', 'object', 'payment_intent'],
  ['data', 'object', 'payment', 'payment_intent'],
  ['data', 'object', 'payments', 'data', '0', 'payment', 'payment_intent'],
];
const PAYMENT_EVENT_TYPES = ['checkout.session.completed', 'checkout.session.async_payment_succeeded', 'invoice_payment.paid', 'invoice.paid'];

/**
 * An unfinished event (still 'processing') of the payment `paymentIntent` paid, if the inbox holds
 * one. A dispute follows its payment by days, except with Stripe's test cards, which open one
 * seconds after the payment: such a dispute may overtake the event that links the payment to our
 * row, and waits for it; a dispute of a payment the inbox holds nothing unfinished of is decided
 * at once. Reads only unfinished rows (the partial index stripe_events_processing_idx).
 */
export async function unfinishedPaymentEvent(tx: Transaction<Database>, paymentIntent: string): Promise<string | undefined> {
  const row = await tx
    .selectFrom('stripe_events')
    .select('event_id')
    .where('status', '=', 'processing')
    .where('type', 'in', PAYMENT_EVENT_TYPES)
    .where(payloadHolds(PAYMENT_INTENT_PATHS, paymentIntent))
    .limit(1)
    .executeTakeFirst();
  return row?.event_id;
}
