// checkout.session.completed (payment_status 'paid') and checkout.session.async_payment_succeeded
// are the one source of truth for fulfilment: they grant the order's credits. The order is the
// business key, so two Event objects for one payment (Stripe documents that this happens), a
// replay, or a resend after the event row was pruned all grant once. A session pays only the
// order that stored its id (metadata.order_id must agree with it, or be absent). A batch handler:
// the payments of all such events in a job are recorded by one statement (order-payment.ts), and
// each grant is told to the app as order.paid in the same transaction (docs/notifications.md).
// A session that names a customer links it to the order's account (the ledger's customer-links.ts):
// that customer's Stripe entitlements become the account's.
import { z } from 'zod';
import {
  objectOrError,
  PermanentError,
  quoted,
  RetryLaterError,
  type BatchHandler,
  type FinishOutcome,
  type HandlerContext,
  type StripeEventRow,
} from '../../business-module.js';
import { linkCustomers, notifyAccounts, paymentWaitKey, type CustomerLink } from '../ledger/index.js';
import { orderWaitKey } from './orders.js';
import { recordOrderPayments, type OrderGrant, type OrderPayment, type PaymentResult } from './order-payment.js';
import { withCreditTables } from './tables.js';

// Only the fields fulfilment depends on; the rest of Stripe's object is kept in the payload.
const checkoutSession = z.object({
  id: z.string(),
  object: z.literal('checkout.session'),
  mode: z.string(),
  payment_status: z.string(),
  amount_total: z.number().int().nullable(),
  currency: z.string().nullable(),
  metadata: z.record(z.string(), z.string()).nullable(),
  payment_intent: z.string().nullable(),
  // Null unless the session made or was given a customer (a package that grants features asks
  // Checkout to make one: customer_creation 'always').
  customer: z.string().nullish(),
});

type CheckoutSession = z.infer<typeof checkoutSession>;

/**
 * What the event asks for: nothing (not paid yet, or a subscription's session, which the billing
 * module handles), a payment to record, or an error it will always have.
 */
function paymentOf(event: StripeEventRow): { session: CheckoutSession; payment?: OrderPayment; notOurs?: true } | PermanentError {
  // The error, not a throw: a batch handler answers for each of its events (objectOrError).
  const session = objectOrError(checkoutSession, event);
  if (session instanceof PermanentError) return session;
  if (session.mode !== 'payment') return { session, notOurs: true };
  // Delayed payment methods (SEPA, bank transfers) complete the session unpaid; the grant comes
  // with checkout.session.async_payment_succeeded.
  if (session.payment_status !== 'paid') return { session };
  return {
    session,
    payment: {
      orderId: session.metadata?.order_id ?? null,
      eventId: event.event_id,
      amount: session.amount_total,
      currency: session.currency?.toLowerCase() ?? null,
      checkoutSessionId: session.id,
      paymentIntentId: session.payment_intent,
    },
  };
}

function outcomeOf(event: StripeEventRow, session: CheckoutSession, payment: OrderPayment, result: PaymentResult): FinishOutcome | Error {
  // What the merchant's metadata says is quoted, capped: anyone who can write metadata writes it.
  const named = payment.orderId === null ? '' : quoted(payment.orderId);
  switch (result.outcome) {
    case 'no_order':
      // Not ours is not a failure (docs/design.md): a Payment Link, a Dashboard session or
      // another app's.
      return { status: 'ignored', reason: `checkout session ${session.id} has no metadata.order_id and no order opened it: not started by POST /api/checkout` };
    case 'unknown_order':
      return new PermanentError(`unknown order ${named} in checkout session ${session.id}`);
    case 'order_mismatch':
      return new PermanentError(`checkout session ${session.id} was opened for order ${result.orderId}, but its metadata.order_id names ${named}: refused`);
    case 'session_mismatch':
      return new PermanentError(
        `checkout session ${session.id} names order ${named} in its metadata.order_id, but that order opened checkout session ${result.storedSessionId}: refused`,
      );
    case 'session_not_stored':
      // POST /api/checkout stores the id once Stripe answers; a request that died in between
      // stores it when retried with the same Idempotency-Key (Stripe answers with the same session),
      // and wakes this event. The order's row lock, taken before the look, keeps the two in turn.
      return new RetryLaterError(
        `checkout session ${session.id} names order ${named} in its metadata.order_id, but that order has stored no checkout session id: waiting for the Checkout Session id (a retry of POST /api/checkout with the same Idempotency-Key stores it)`,
        {
          waitsFor: [orderWaitKey(payment.orderId!)],
        },
      );
    case 'price_mismatch':
      return new PermanentError(
        `amount or currency mismatch for order ${result.orderId}: session paid ${session.amount_total ?? 'null'} ${session.currency ?? 'null'}, order costs ${result.amount} ${result.currency}`,
      );
    case 'granted':
      return { status: 'processed' };
    case 'already_granted':
      // Re-running the event that granted (a replay) is the same outcome, not a duplicate.
      return result.byEventId === event.event_id ? { status: 'processed' } : { status: 'duplicate', duplicateOf: result.byEventId };
  }
}

export const checkoutSessionPaid =
  ({ notifications, wake }: HandlerContext): BatchHandler =>
  async (tx, events) => {
    const asks = events.map(paymentOf);
    // An event that can never succeed fails the batch (the dispatcher stops at the first error and
    // the transaction is rolled back), so no statement runs; the others are placeholders.
    if (asks.some((ask) => ask instanceof Error)) return asks.map((ask) => (ask instanceof Error ? ask : { status: 'processed' }));
    const payments = asks.flatMap((ask) => (ask instanceof Error || !ask.payment ? [] : [ask.payment]));
    const recorded = await recordOrderPayments(withCreditTables(tx), payments);
    // A dispute or a refund that overtook this payment waits for it (docs/events.md): it runs as
    // soon as this commits.
    await wake(
      tx,
      recorded.flatMap((result, i) =>
        result.outcome === 'granted' && payments[i]!.paymentIntentId !== null ? [paymentWaitKey(payments[i]!.paymentIntentId)] : [],
      ),
    );
    await notifyAccounts(
      tx,
      notifications,
      recorded.flatMap((result, i) => (result.outcome === 'granted' ? [orderPaid(result.grant, payments[i]!)] : [])),
    );
    const refusedLinks = await linkSessionCustomers(tx, wake, asks, recorded, payments);
    const results = new Map(recorded.map((result, i) => [payments[i]!.eventId, result]));
    return asks.map((ask, i) => {
      if (ask instanceof Error) return ask;
      const refused = refusedLinks.get(events[i]!.event_id);
      if (refused) return refused;
      if (ask.notOurs) return { status: 'ignored' };
      const result = results.get(events[i]!.event_id);
      return ask.payment && result ? outcomeOf(events[i]!, ask.session, ask.payment, result) : { status: 'processed' };
    });
  };

/**
 * The customer of each session that granted, linked to the order's account (the ledger's
 * customer-links.ts): what makes its entitlements this account's. By event id, the refusals of a
 * customer that is another account's.
 */
async function linkSessionCustomers(
  tx: Parameters<BatchHandler>[0],
  wake: HandlerContext['wake'],
  asks: ReadonlyArray<{ session: CheckoutSession } | PermanentError>,
  recorded: readonly PaymentResult[],
  payments: readonly OrderPayment[],
): Promise<Map<string, PermanentError>> {
  const customers = new Map(asks.flatMap((ask) => (ask instanceof Error || !ask.session.customer ? [] : [[ask.session.id, ask.session.customer] as const])));
  const links: Array<CustomerLink & { eventId: string }> = recorded.flatMap((result, i) => {
    const customerId = customers.get(payments[i]!.checkoutSessionId);
    return result.outcome === 'granted' && customerId
      ? [{ customerId, accountId: result.grant.accountId, checkoutSessionId: payments[i]!.checkoutSessionId, eventId: payments[i]!.eventId }]
      : [];
  });
  const refusals = await linkCustomers(tx, wake, links);
  return new Map(refusals.flatMap((refused, i) => (refused ? [[links[i]!.eventId, refused] as const] : [])));
}

/** The order.paid notification of a grant: once per order, as the grant is. */
function orderPaid(grant: OrderGrant, payment: OrderPayment) {
  return {
    type: 'order.paid',
    key: `order.paid:${grant.orderId}`,
    accountId: grant.accountId,
    creditsDelta: grant.credits,
    eventId: payment.eventId,
    data: {
      order_id: grant.orderId,
      package_id: grant.packageId,
      credits: grant.credits,
      amount: grant.amount,
      currency: grant.currency,
      stripe_event_id: payment.eventId,
      checkout_session_id: payment.checkoutSessionId,
    },
  };
}
