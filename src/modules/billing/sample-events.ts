// Realistic Billing events built from Stripe's published example objects (src/stripe/fixtures/),
// overriding only what matters: for `npm run send-event` and the tests, never the service. A
// period's events come in the order Stripe emits them, each `created` a second after the last;
// deliveries then arrive in any order.
import { exampleObject, randomStripeId, sampleEvent, type SampleEvent } from '../../business-module.js';
import { SUBSCRIPTION_ID_KEY } from './stripe-schemas.js';

export interface SampleSubscription {
  /** Ours (subscr_…), as POST /api/subscriptions made it. */
  subscriptionId: string;
  /** Stripe's (sub_…). */
  stripeSubscriptionId: string;
  /**
   * The Checkout Session POST /api/subscriptions opened and stored: its completion links the Stripe
   * subscription to ours. A session of another id (the default, a random one) links nothing.
   */
  checkoutSessionId?: string | undefined;
  amount: number;
  currency: string;
  /** The customer its checkout made (cus_…); none in Stripe's example session. */
  stripeCustomerId?: string | undefined;
}

const DAY_SECONDS = 24 * 60 * 60;
/** A month, as the samples count it. */
export const PERIOD_SECONDS = 30 * DAY_SECONDS;

/** A Stripe subscription of ours, shaped as the current API sends it (the period on its items). */
export function subscriptionObject(
  subscription: SampleSubscription,
  state: {
    status: string;
    periodEnd: number;
    periodStart?: number;
    cancelAtPeriodEnd?: boolean;
    pause?: { behavior: string; resumesAt: number | null };
    metadata?: boolean;
  },
): Record<string, unknown> {
  const example = exampleObject('subscription');
  const items = example.items as { data: Array<Record<string, unknown>> };
  return {
    ...example,
    id: subscription.stripeSubscriptionId,
    status: state.status,
    cancel_at_period_end: state.cancelAtPeriodEnd ?? false,
    // Stripe's example is paused; ours collect unless asked.
    pause_collection: state.pause ? { behavior: state.pause.behavior, resumes_at: state.pause.resumesAt } : null,
    cancel_at: null,
    canceled_at: null,
    ended_at: null,
    currency: subscription.currency,
    metadata: state.metadata === false ? {} : { [SUBSCRIPTION_ID_KEY]: subscription.subscriptionId },
    items: {
      ...items,
      data: items.data.map((item) => ({
        ...item,
        subscription: subscription.stripeSubscriptionId,
        current_period_end: state.periodEnd,
        current_period_start: state.periodStart ?? state.periodEnd - PERIOD_SECONDS,
      })),
    },
  };
}

/**
 * An invoice of the subscription, its subscription and our id under parent.subscription_details,
 * with one line for the period it pays (subscription.period_paid tells the app that period).
 */
export function invoiceObject(
  subscription: SampleSubscription,
  invoice: {
    id?: string;
    billingReason: string;
    status: 'draft' | 'open' | 'paid';
    /** The period it pays, in Unix seconds; from now for PERIOD_SECONDS unless given. */
    period?: { start: number; end: number };
    /** After discounts and taxes; the plan's amount unless given. */
    total?: number;
    /** Paid from the customer's credit balance, which Stripe applies before charging. */
    fromBalance?: number;
    currency?: string;
    metadata?: boolean;
  },
): Record<string, unknown> {
  const total = invoice.total ?? subscription.amount;
  const due = total - (invoice.fromBalance ?? 0);
  const paid = invoice.status === 'paid' ? due : 0;
  const now = Math.floor(Date.now() / 1000);
  const period = invoice.period ?? { start: now, end: now + PERIOD_SECONDS };
  const example = exampleObject('invoice');
  const [line] = (example.lines as { data: Array<Record<string, unknown>> }).data;
  const currency = invoice.currency ?? subscription.currency;
  return {
    ...example,
    id: invoice.id ?? randomStripeId('in'),
    // Stripe's own period of a subscription invoice is the one that just ended: none for the
    // first (start = end, its creation), the previous period for a renewal. Its line's is the one paid.
    period_start: invoice.billingReason === 'subscription_create' ? period.start : period.start - (period.end - period.start),
    period_end: period.start,
    lines: {
      ...(example.lines as Record<string, unknown>),
      data: [
        {
          ...line,
          amount: total,
          subtotal: total,
          currency,
          description: null,
          period,
          parent: {
            type: 'subscription_item_details',
            invoice_item_details: null,
            subscription_item_details: {
              invoice_item: null,
              proration: false,
              proration_details: { credited_items: null },
              subscription: subscription.stripeSubscriptionId,
              subscription_item: randomStripeId('si'),
            },
          },
        },
      ],
    },
    billing_reason: invoice.billingReason,
    status: invoice.status,
    currency,
    amount_due: due,
    amount_paid: paid,
    amount_remaining: due - paid,
    total,
    subtotal: total,
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: {
        subscription: subscription.stripeSubscriptionId,
        metadata: invoice.metadata === false ? null : { [SUBSCRIPTION_ID_KEY]: subscription.subscriptionId },
      },
    },
  };
}

/**
 * Which PaymentIntent paid which invoice. Stripe publishes no example object of this type; the
 * fields are its API reference's.
 */
export function invoicePaymentObject(invoiceId: string, paymentIntentId: string, amount: number, currency: string): Record<string, unknown> {
  return {
    id: randomStripeId('inpay'),
    object: 'invoice_payment',
    amount_paid: amount,
    amount_requested: amount,
    created: Math.floor(Date.now() / 1000),
    currency,
    invoice: invoiceId,
    is_default: true,
    livemode: false,
    payment: { type: 'payment_intent', payment_intent: paymentIntentId },
    status: 'paid',
    status_transitions: { canceled_at: null, paid_at: Math.floor(Date.now() / 1000) },
  };
}

/**
 * Every event of one period of the subscription, in Stripe's order: the first (cycle 1) starts
 * with the subscription's creation and the completed checkout; each later cycle is a renewal.
 * Each is `created` a second after the one before, the last at `lastAt` (seconds); the period
 * runs from `periodStart` (PERIOD_SECONDS before its end unless given) to `periodEnd`.
 */
export function periodEvents(
  subscription: SampleSubscription,
  period: { cycle: number; lastAt: number; periodEnd: number; periodStart?: number },
): SampleEvent[] {
  const { cycle, lastAt, periodEnd } = period;
  const periodStart = period.periodStart ?? periodEnd - PERIOD_SECONDS;
  const invoiceId = randomStripeId('in');
  const paymentIntentId = randomStripeId('pi');
  const reason = cycle === 1 ? 'subscription_create' : 'subscription_cycle';
  const invoice = { id: invoiceId, billingReason: reason, period: { start: periodStart, end: periodEnd } };
  const paidInvoice = invoiceObject(subscription, { ...invoice, status: 'paid' });
  const money = { amount: subscription.amount, currency: subscription.currency, payment_intent: paymentIntentId };
  const objects: Array<[string, Record<string, unknown>]> = [
    ...(cycle === 1
      ? ([
          ['customer.subscription.created', subscriptionObject(subscription, { status: 'incomplete', periodStart, periodEnd })],
          ['checkout.session.completed', checkoutSessionObject(subscription)],
        ] as Array<[string, Record<string, unknown>]>)
      : []),
    ['invoice.created', invoiceObject(subscription, { ...invoice, status: 'draft' })],
    ['invoice.finalized', invoiceObject(subscription, { ...invoice, status: 'open' })],
    [
      'payment_intent.succeeded',
      {
        ...exampleObject('payment_intent'),
        id: paymentIntentId,
        amount: money.amount,
        amount_received: money.amount,
        currency: money.currency,
        status: 'succeeded',
        metadata: {},
      },
    ],
    [
      'charge.succeeded',
      {
        ...exampleObject('charge'),
        id: randomStripeId('ch'),
        amount: money.amount,
        amount_captured: money.amount,
        currency: money.currency,
        payment_intent: paymentIntentId,
        paid: true,
        refunded: false,
        amount_refunded: 0,
      },
    ],
    ['invoice_payment.paid', invoicePaymentObject(invoiceId, paymentIntentId, money.amount, money.currency)],
    ['invoice.paid', paidInvoice],
    ['invoice.payment_succeeded', paidInvoice],
    ['customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodStart, periodEnd })],
  ];
  return objects.map(([type, object], i) => sampleEvent(type, object, { created: lastAt - (objects.length - 1 - i) }));
}

/** The completed Checkout Session that started the subscription. */
export function checkoutSessionObject(subscription: SampleSubscription): Record<string, unknown> {
  return {
    ...exampleObject('checkout.session'),
    id: subscription.checkoutSessionId ?? randomStripeId('cs'),
    mode: 'subscription',
    status: 'complete',
    payment_status: 'paid',
    amount_subtotal: subscription.amount,
    amount_total: subscription.amount,
    currency: subscription.currency,
    client_reference_id: subscription.subscriptionId,
    metadata: { [SUBSCRIPTION_ID_KEY]: subscription.subscriptionId },
    payment_intent: null,
    subscription: subscription.stripeSubscriptionId,
    customer: subscription.stripeCustomerId ?? null,
  };
}
