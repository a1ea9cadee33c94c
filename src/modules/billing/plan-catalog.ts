// Plans as catalog items (src/modules/catalog/ writes them): the plans table, which this module
// owns. Amount, currency, credits, the period and the Stripe Price never change once a plan exists
// (sql/billing/0021's trigger), nor does a usage-billed plan's meter (0040): a subscription copies the first three, and checkout bills the rest.
import { z } from 'zod';
import { catalogFields, catalogKind, checkPlanPeriod, creditsOrNone, planPeriodFields } from '../catalog/index.js';
import type { PlansTable } from './tables.js';

/** Stripe's rule for a meter's event_name, as plans_meter_event_name_shape checks it. */
export const meterEventName = z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, "must be a meter's event_name: 1-100 characters of A-Z, a-z, 0-9, _ . : -");

export const newPlan = z
  .strictObject({ ...catalogFields, credits: creditsOrNone, ...planPeriodFields, meter_event_name: meterEventName.optional() })
  .superRefine(checkPlanPeriod)
  // Runs under a usage-billed plan are reported to its meter, not drawn from credits, so it may
  // grant none (sql/billing/0042); any other plan is bought for its credits.
  .refine((plan) => plan.credits > 0 || plan.meter_event_name !== undefined, {
    path: ['credits'],
    message: 'must be a positive integer (0 only for a usage-billed plan, one that names a meter_event_name)',
  })
  .refine((plan) => plan.meter_event_name === undefined || plan.stripe_price_id !== undefined, {
    path: ['stripe_price_id'],
    message: 'a usage-billed plan (meter_event_name) is sold through its metered Stripe Price: name it',
  });
export type NewPlan = z.infer<typeof newPlan>;

export const planCatalog = catalogKind<'plan_id', PlansTable, NewPlan>({
  noun: 'plan',
  table: 'plans',
  idColumn: 'plan_id',
  priceTerms: (input) => ({
    amount: input.amount,
    currency: input.currency,
    recurring: { interval: input.interval, interval_count: input.interval_count, usage_type: input.meter_event_name ? 'metered' : 'licensed' },
    meterEventName: input.meter_event_name ?? null,
  }),
  ownColumns: (input) => ({ interval: input.interval, interval_count: input.interval_count, meter_event_name: input.meter_event_name ?? null }),
  // A usage-billed plan shows its meter; the others look as they did before meters.
  ownView: (p) => ({ interval: p.interval, interval_count: p.interval_count, ...(p.meter_event_name !== null && { meter_event_name: p.meter_event_name }) }),
});
