// Reading Stripe's objects out of stored events: the fields a handler depends on, checked with
// zod; the rest stays in the payload. Shapes every business shares live here (a refunded charge);
// a module keeps its own next to its handlers.
import { z } from 'zod';
import type { StripeEventRow } from '../db/schema.js';
import { PermanentError } from '../outcomes.js';
import { quoted } from '../quoted.js';

// The envelope around each object schema, built once per schema: building a zod schema costs far
// more than parsing with it, and handlers read an object per event, several modules the same one.
const envelopes = new WeakMap<z.ZodType, z.ZodType>();
const envelopeOf = (schema: z.ZodType): z.ZodType => {
  let envelope = envelopes.get(schema);
  if (!envelope) envelopes.set(schema, (envelope = z.object({ data: z.object({ object: schema }) })));
  return envelope;
};

/** data.object of a stored event, checked against `schema`: a payload that never parses is a PermanentError. */
export function objectOf<T extends z.ZodType>(schema: T, event: Pick<StripeEventRow, 'type' | 'payload'>): z.infer<T> {
  const object = objectOrError(schema, event);
  if (object instanceof PermanentError) throw object;
  return object;
}

/**
 * objectOf for a batch handler, which returns an event's error rather than throwing it (a throw
 * would fail every event of the batch): the object, or the PermanentError objectOf would throw.
 */
export function objectOrError<T extends z.ZodType>(schema: T, event: Pick<StripeEventRow, 'type' | 'payload'>): z.infer<T> | PermanentError {
  const parsed = envelopeOf(schema).safeParse(event.payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // A path can run through metadata, whose keys are the merchant's.
    return new PermanentError(`not the ${event.type} object expected: ${quoted(issue?.path.join('.') ?? '')} ${issue?.message ?? 'invalid'}`);
  }
  return (parsed.data as { data: { object: z.infer<T> } }).data.object;
}

const metadata = z.record(z.string(), z.string()).nullish();
// A field Stripe sends as an id, or as the object when the event's request expanded it.
const idOrObject = <T extends z.ZodRawShape>(shape: T) => z.union([z.string(), z.object({ id: z.string(), ...shape })]);

/**
 * charge.refunded's charge. Stripe sends it once per refund with the cumulative amount_refunded,
 * and names the payment by its PaymentIntent. What tells whose charge it is comes along:
 * `metadata` (a PaymentIntent's, copied to its charge when it is confirmed), the PaymentIntent's
 * own metadata when it is expanded, `invoice` (removed in API version 2025-03-31, so undefined
 * there: unknown, not absent) and `customer` (every invoice bills one).
 */
export const refundedCharge = z
  .object({
    id: z.string(),
    object: z.literal('charge'),
    amount_refunded: z.number().int().nonnegative(),
    payment_intent: idOrObject({ metadata }).nullable(),
    // Newest first, when the event's API version still expands them (absent since 2022-11-15).
    refunds: z.object({ data: z.array(z.object({ id: z.string() })) }).nullish(),
    metadata,
    invoice: idOrObject({}).nullish(),
    customer: idOrObject({}).nullish(),
  })
  .transform(({ payment_intent, invoice, customer, ...charge }) => ({
    ...charge,
    payment_intent: typeof payment_intent === 'string' || payment_intent === null ? payment_intent : payment_intent.id,
    /** The PaymentIntent's metadata, when the payload carries the PaymentIntent itself. */
    payment_intent_metadata: typeof payment_intent === 'object' && payment_intent !== null ? payment_intent.metadata : undefined,
    invoice: typeof invoice === 'object' && invoice !== null ? invoice.id : invoice,
    customer: typeof customer === 'object' && customer !== null ? customer.id : customer,
  }));
export type RefundedCharge = z.infer<typeof refundedCharge>;

/**
 * A dispute (charge.dispute.*): Stripe names the disputed charge and its PaymentIntent by id (the
 * charge itself when the event's request expanded it), and the dispute's own `status`. Its
 * `metadata` is the dispute's, never the charge's: the charge's ids are what link it to a purchase.
 */
export const stripeDispute = z
  .object({
    id: z.string(),
    object: z.literal('dispute'),
    charge: idOrObject({}),
    payment_intent: idOrObject({}).nullable(),
    status: z.string(),
  })
  .transform(({ charge, payment_intent, ...dispute }) => ({
    ...dispute,
    charge: typeof charge === 'string' ? charge : charge.id,
    payment_intent: typeof payment_intent === 'string' || payment_intent === null ? payment_intent : payment_intent.id,
  }));
export type StripeDispute = z.infer<typeof stripeDispute>;
