// The fields of Stripe's objects that billing depends on, read with objectOf
// (src/stripe/stripe-objects.ts); the rest of each object stays in the stored payload. Shapes follow the API version of Stripe's current objects
// (2025-03-31 onwards): an invoice names its subscription under parent.subscription_details, and a
// subscription's period is on its items.
import { z } from 'zod';

const metadata = z.record(z.string(), z.string()).nullable().optional();

export const stripeSubscription = z.object({
  id: z.string(),
  object: z.literal('subscription'),
  status: z.string(),
  cancel_at_period_end: z.boolean(),
  metadata,
  items: z.object({ data: z.array(z.object({ current_period_end: z.number().int().optional() })) }),
});
export type StripeSubscription = z.infer<typeof stripeSubscription>;

export const stripeInvoice = z.object({
  id: z.string(),
  object: z.literal('invoice'),
  billing_reason: z.string().nullable(),
  currency: z.string(),
  amount_paid: z.number().int(),
  parent: z
    .object({
      type: z.string(),
      subscription_details: z.object({ subscription: z.string(), metadata }).nullable().optional(),
    })
    .nullable(),
  // Present when the event's API version includes the invoice's payments.
  payments: z.object({ data: z.array(z.object({ payment: z.object({ payment_intent: z.string().nullable().optional() }) })) }).optional(),
});

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
  metadata,
});

/** Our id, which POST /api/subscriptions puts in the metadata of every Stripe object it starts. */
export const SUBSCRIPTION_ID_KEY = 'subscription_id';
