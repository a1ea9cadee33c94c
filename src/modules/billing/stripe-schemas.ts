// The fields of Stripe's objects that billing depends on, read with objectOf (from the front door,
// src/business-module.ts); the rest of each object stays in the stored payload.
//
// Shapes follow Stripe's current objects, and where a field billing reads moved in API version
// 2025-03-31.basil, its older place too: a webhook endpoint renders events in the API version it
// was created with, so an account whose endpoint predates that version sends the older shapes.
// Since then an invoice names its subscription under parent.subscription_details and lists its
// payments, and a subscription's period is on its items; before, the invoice had `subscription`,
// `subscription_details.metadata` and `payment_intent` at its top level, and the subscription its
// own `current_period_end`. Each schema reads both and hands the handlers one shape.
import { z } from 'zod';

const metadata = z.record(z.string(), z.string()).nullable().optional();

export const stripeSubscription = z.object({
  id: z.string(),
  object: z.literal('subscription'),
  status: z.string(),
  cancel_at_period_end: z.boolean(),
  // Absent from versions before collection could be paused; null while Stripe collects.
  pause_collection: z.object({ behavior: z.string(), resumes_at: z.number().int().nullable() }).nullish(),
  metadata,
  items: z.object({ data: z.array(z.object({ current_period_end: z.number().int().optional() })) }),
  // Before 2025-03-31: the period was the subscription's, not its items'.
  current_period_end: z.number().int().nullish(),
});
export type StripeSubscription = z.infer<typeof stripeSubscription>;

const subscriptionDetails = z.object({ subscription: z.string(), metadata });

export const stripeInvoice = z
  .object({
    id: z.string(),
    object: z.literal('invoice'),
    billing_reason: z.string().nullable(),
    currency: z.string(),
    amount_paid: z.number().int(),
    total: z.number().int(),
    // The invoice's own period is the one before a renewal's; its lines carry the period it pays.
    period_start: z.number().int().nullish(),
    period_end: z.number().int().nullish(),
    lines: z.object({ data: z.array(z.object({ period: z.object({ start: z.number().int(), end: z.number().int() }).nullish() })) }).optional(),
    parent: z.object({ type: z.string(), subscription_details: subscriptionDetails.nullish() }).nullish(),
    // Present when the event's API version includes the invoice's payments.
    payments: z.object({ data: z.array(z.object({ payment: z.object({ payment_intent: z.string().nullish() }) })) }).optional(),
    // Before 2025-03-31.
    subscription: z.string().nullish(),
    subscription_details: z.object({ metadata }).nullish(),
    payment_intent: z.string().nullish(),
  })
  .transform(({ parent, payments, subscription, subscription_details, payment_intent, lines, period_start, period_end, ...invoice }) => ({
    ...invoice,
    /** The period the invoice pays (its lines'), in Unix seconds; the invoice's own when it lists no line. */
    period: linesPeriod(lines?.data ?? []) ?? { start: period_start ?? null, end: period_end ?? null },
    /** The subscription the invoice bills and its metadata when the invoice was made; null for an invoice of no subscription. */
    subscription_details: parent?.subscription_details ?? (subscription ? { subscription, metadata: subscription_details?.metadata } : null),
    /** The PaymentIntents this event says paid the invoice. */
    payment_intents: [...(payments?.data ?? []).map((p) => p.payment.payment_intent), payment_intent].filter((id): id is string => typeof id === 'string'),
  }));

function linesPeriod(lines: ReadonlyArray<{ period?: { start: number; end: number } | null }>): { start: number; end: number } | undefined {
  const periods = lines.flatMap((line) => (line.period ? [line.period] : []));
  if (periods.length === 0) return undefined;
  return { start: Math.min(...periods.map((p) => p.start)), end: Math.max(...periods.map((p) => p.end)) };
}

export const stripeInvoicePayment = z.object({
  object: z.literal('invoice_payment'),
  invoice: z.string(),
  payment: z.object({ type: z.string(), payment_intent: z.string().nullable().optional() }),
});

export const subscriptionCheckoutSession = z.object({
  id: z.string(),
  object: z.literal('checkout.session'),
  mode: z.string(),
  subscription: z.string().nullable(),
  customer: z.string().nullable(),
  metadata,
});

/** Our id, which POST /api/subscriptions puts in the metadata of every Stripe object it starts. */
export const SUBSCRIPTION_ID_KEY = 'subscription_id';
