// checkout.session.completed (payment_status 'paid') and checkout.session.async_payment_succeeded
// are the one source of truth for fulfilment: they grant the order's credits. The order is the
// business key, so two Event objects for one payment (Stripe documents that this happens), a
// replay, or a resend after the event row was pruned all grant once.
import type { Transaction } from 'kysely';
import { z } from 'zod';
import type { Database, StripeEventRow } from '../db/schema.js';
import type { FinishOutcome } from '../events/event-store.js';
import { PermanentError } from './errors.js';
import { recordOrderPayment } from './order-payment.js';

// Only the fields fulfilment depends on; the rest of Stripe's object is kept in the payload.
const checkoutSessionEvent = z.object({
  data: z.object({
    object: z.object({
      id: z.string(),
      object: z.literal('checkout.session'),
      payment_status: z.string(),
      amount_total: z.number().int().nullable(),
      currency: z.string().nullable(),
      metadata: z.record(z.string(), z.string()).nullable(),
      payment_intent: z.string().nullable(),
    }),
  }),
});

export async function fulfilCheckoutSession(tx: Transaction<Database>, event: StripeEventRow): Promise<FinishOutcome> {
  const parsed = checkoutSessionEvent.safeParse(event.payload);
  if (!parsed.success) throw new PermanentError(`not a checkout session event: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const session = parsed.data.data.object;

  // Delayed payment methods (SEPA, bank transfers) complete the session unpaid; the grant comes
  // with checkout.session.async_payment_succeeded.
  if (session.payment_status !== 'paid') return { status: 'processed' };

  const orderId = session.metadata?.order_id;
  if (!orderId) throw new PermanentError(`checkout session ${session.id} has no metadata.order_id`);
  const payment = await recordOrderPayment(tx, {
    orderId,
    eventId: event.event_id,
    amount: session.amount_total,
    currency: session.currency?.toLowerCase() ?? null,
    checkoutSessionId: session.id,
    paymentIntentId: session.payment_intent,
  });
  switch (payment.outcome) {
    case 'unknown_order':
      throw new PermanentError(`unknown order ${orderId} in checkout session ${session.id}`);
    case 'price_mismatch':
      throw new PermanentError(
        `amount or currency mismatch for order ${orderId}: session paid ${session.amount_total ?? 'null'} ${session.currency ?? 'null'}, order costs ${payment.amount} ${payment.currency}`,
      );
    case 'granted':
      return { status: 'processed' };
    case 'already_granted':
      // Re-running the event that granted (a replay) is the same outcome, not a duplicate.
      return payment.byEventId === event.event_id ? { status: 'processed' } : { status: 'duplicate', duplicateOf: payment.byEventId };
  }
}
