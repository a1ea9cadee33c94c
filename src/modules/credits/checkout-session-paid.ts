// checkout.session.completed (payment_status 'paid') and checkout.session.async_payment_succeeded
// are the one source of truth for fulfilment: they grant the order's credits. The order is the
// business key, so two Event objects for one payment (Stripe documents that this happens), a
// replay, or a resend after the event row was pruned all grant once. A batch handler: the
// payments of all such events in a job are recorded by one statement (order-payment.ts).
import { z } from 'zod';
import type { StripeEventRow } from '../../db/schema.js';
import type { FinishOutcome } from '../../events/event-store.js';
import { PermanentError, type BatchHandler } from '../../fulfilment/handler.js';
import { recordOrderPayments, type OrderPayment, type PaymentResult } from './order-payment.js';
import { withCreditTables } from './tables.js';

// Only the fields fulfilment depends on; the rest of Stripe's object is kept in the payload.
const checkoutSessionEvent = z.object({
  data: z.object({
    object: z.object({
      id: z.string(),
      object: z.literal('checkout.session'),
      mode: z.string(),
      payment_status: z.string(),
      amount_total: z.number().int().nullable(),
      currency: z.string().nullable(),
      metadata: z.record(z.string(), z.string()).nullable(),
      payment_intent: z.string().nullable(),
    }),
  }),
});

type CheckoutSession = z.infer<typeof checkoutSessionEvent>['data']['object'];

/**
 * What the event asks for: nothing (not paid yet, or a subscription's session, which the billing
 * module handles), a payment to record, or an error it will always have.
 */
function paymentOf(event: StripeEventRow): { session: CheckoutSession; payment?: OrderPayment; notOurs?: true } | PermanentError {
  const parsed = checkoutSessionEvent.safeParse(event.payload);
  if (!parsed.success) return new PermanentError(`not a checkout session event: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const session = parsed.data.data.object;
  if (session.mode !== 'payment') return { session, notOurs: true };
  // Delayed payment methods (SEPA, bank transfers) complete the session unpaid; the grant comes
  // with checkout.session.async_payment_succeeded.
  if (session.payment_status !== 'paid') return { session };
  const orderId = session.metadata?.order_id;
  if (!orderId) return new PermanentError(`checkout session ${session.id} has no metadata.order_id`);
  return {
    session,
    payment: {
      orderId,
      eventId: event.event_id,
      amount: session.amount_total,
      currency: session.currency?.toLowerCase() ?? null,
      checkoutSessionId: session.id,
      paymentIntentId: session.payment_intent,
    },
  };
}

function outcomeOf(event: StripeEventRow, session: CheckoutSession, payment: OrderPayment, result: PaymentResult): FinishOutcome | PermanentError {
  switch (result.outcome) {
    case 'unknown_order':
      return new PermanentError(`unknown order ${payment.orderId} in checkout session ${session.id}`);
    case 'price_mismatch':
      return new PermanentError(
        `amount or currency mismatch for order ${payment.orderId}: session paid ${session.amount_total ?? 'null'} ${session.currency ?? 'null'}, order costs ${result.amount} ${result.currency}`,
      );
    case 'granted':
      return { status: 'processed' };
    case 'already_granted':
      // Re-running the event that granted (a replay) is the same outcome, not a duplicate.
      return result.byEventId === event.event_id ? { status: 'processed' } : { status: 'duplicate', duplicateOf: result.byEventId };
  }
}

export const checkoutSessionPaid: BatchHandler = async (tx, events) => {
  const asks = events.map(paymentOf);
  // An event that can never succeed fails the batch (the dispatcher stops at the first error and
  // the transaction is rolled back), so no statement runs; the others are placeholders.
  if (asks.some((ask) => ask instanceof Error)) return asks.map((ask) => (ask instanceof Error ? ask : { status: 'processed' }));
  const payments = asks.flatMap((ask) => (ask instanceof Error || !ask.payment ? [] : [ask.payment]));
  const results = new Map((await recordOrderPayments(withCreditTables(tx), payments)).map((result, i) => [payments[i]!.eventId, result]));
  return asks.map((ask, i) => {
    if (ask instanceof Error) return ask;
    if (ask.notOurs) return { status: 'ignored' };
    const result = results.get(events[i]!.event_id);
    return ask.payment && result ? outcomeOf(events[i]!, ask.session, ask.payment, result) : { status: 'processed' };
  });
};
