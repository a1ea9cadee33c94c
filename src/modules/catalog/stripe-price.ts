// A package or plan sold through a Stripe Price: the Price must say what the row says, since the
// webhook checks the session's amount and currency against the row, not against the Price. Read
// once at creation (checkStripePrice) and again whenever Stripe tells us the Price or its Product
// changed (price-events.ts).
import { z } from 'zod';
import type { StripeCallFailure, StripeCalls } from '../../business-module.js';

/** What a Price must be to sell a row: a one-time price for a package, a recurring one for a plan. */
export interface PriceTerms {
  amount: number;
  currency: string;
  /** A usage-billed plan's Price is metered: Stripe bills what its meter recorded, not a quantity. */
  recurring: { interval: string; interval_count: number; usage_type: 'licensed' | 'metered' } | null;
  /** A usage-billed plan's meter event_name: the Price's meter must be the one its runs are reported to. */
  meterEventName?: string | null;
}

/** The fields of a Price the terms depend on, as the API and price.updated's data.object carry them. */
export const stripePrice = z.object({
  id: z.string(),
  object: z.literal('price'),
  active: z.boolean(),
  currency: z.string(),
  // null for a tiered or customer-chosen price: never what a fixed row sells.
  unit_amount: z.number().int().nullable(),
  type: z.enum(['one_time', 'recurring']),
  recurring: z
    .object({ interval: z.string(), interval_count: z.number().int(), usage_type: z.string().default('licensed'), meter: z.string().nullish() })
    .nullable(),
  product: z.union([z.string(), z.object({ id: z.string() })]),
  lookup_key: z.string().nullish(),
});
export type StripePrice = z.infer<typeof stripePrice>;

export const productIdOf = (price: StripePrice) => (typeof price.product === 'string' ? price.product : price.product.id);

/** Why the Price does not sell what the terms say (none: it does), each naming the field. */
export function priceMismatches(price: StripePrice, terms: PriceTerms): string[] {
  const reasons: string[] = [];
  if (!price.active) reasons.push(`Price ${price.id} is archived (active: false)`);
  if (price.unit_amount !== terms.amount) reasons.push(`its unit_amount is ${price.unit_amount ?? 'not fixed'}, the amount ${terms.amount}`);
  if (price.currency !== terms.currency) reasons.push(`its currency is ${price.currency}, the currency ${terms.currency}`);
  const type = terms.recurring ? 'recurring' : 'one_time';
  if (price.type !== type) reasons.push(`it is ${price.type}, and a ${terms.recurring ? 'plan needs a recurring' : 'package needs a one_time'} Price`);
  else if (terms.recurring && price.recurring) {
    const { interval, interval_count } = price.recurring;
    if (interval !== terms.recurring.interval || interval_count !== terms.recurring.interval_count) {
      reasons.push(`it bills every ${interval_count} ${interval}, the plan every ${terms.recurring.interval_count} ${terms.recurring.interval}`);
    }
    if (price.recurring.usage_type !== terms.recurring.usage_type)
      reasons.push(
        `its usage_type is ${price.recurring.usage_type}, and the plan is ${terms.recurring.usage_type === 'metered' ? 'usage-billed (metered)' : 'not usage-billed (licensed)'}`,
      );
  }
  return reasons;
}

export type PriceCheck = { outcome: 'matches'; productId: string } | { outcome: 'refused'; reason: string } | StripeCallFailure;

/** Fetches the Price through the bounded outbound calls and compares it with the terms. */
export async function checkStripePrice(stripeCalls: StripeCalls, priceId: string, terms: PriceTerms): Promise<PriceCheck> {
  const call = await stripeCalls.attempt('price_retrieve', (stripe) => stripe.prices.retrieve(priceId));
  // Stripe answers an unknown id with 404 invalid_request_error: asking again will not help.
  if (call.outcome === 'stripe_failed' && call.reason === 'StripeInvalidRequestError')
    return { outcome: 'refused', reason: `Stripe has no Price ${priceId} (with this STRIPE_SECRET_KEY)` };
  if (call.outcome !== 'done') return call;
  const price = stripePrice.safeParse(call.value);
  if (!price.success)
    return {
      outcome: 'refused',
      reason: `Price ${priceId} is not a Price this service can sell: ${price.error.issues[0]?.path.join('.')} ${price.error.issues[0]?.message}`,
    };
  const reasons = priceMismatches(price.data, terms);
  if (reasons.length > 0) return { outcome: 'refused', reason: reasons.join('; ') };
  const meter = terms.meterEventName ? await checkMeter(stripeCalls, price.data, terms.meterEventName) : undefined;
  return meter ?? { outcome: 'matches', productId: productIdOf(price.data) };
}

/**
 * A usage-billed plan's runs are reported under its meter_event_name, and Stripe bills the Price
 * by its own meter: were they two meters, every use would be reported and none billed. Undefined
 * when the Price's meter has that event_name.
 */
async function checkMeter(stripeCalls: StripeCalls, price: StripePrice, eventName: string): Promise<PriceCheck | undefined> {
  const meterId = price.recurring?.meter;
  if (!meterId) return { outcome: 'refused', reason: `Price ${price.id} names no meter, and a usage-billed plan's Price bills its meter's events` };
  const call = await stripeCalls.attempt('meter_retrieve', (stripe) => stripe.billing.meters.retrieve(meterId));
  if (call.outcome !== 'done') return call;
  const meterEventName = (call.value as { event_name?: unknown }).event_name;
  if (meterEventName === eventName) return undefined;
  return {
    outcome: 'refused',
    reason: `Price ${price.id} bills meter ${meterId}, whose event_name is ${String(meterEventName)}, not ${eventName}: the plan's runs would be reported to a meter that bills nothing`,
  };
}
