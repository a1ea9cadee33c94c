// Plans as catalog items (src/modules/catalog/ writes them): the plans table, which this module
// owns. Amount, currency, credits, the period and the Stripe Price never change once a plan exists
// (sql/billing/0021's trigger): a subscription copies the first three, and checkout bills the rest.
import { z } from 'zod';
import { catalogFields, catalogKind, checkPlanPeriod, planPeriodFields } from '../catalog/index.js';
import type { PlansTable } from './tables.js';

export const newPlan = z.strictObject({ ...catalogFields, ...planPeriodFields }).superRefine(checkPlanPeriod);
export type NewPlan = z.infer<typeof newPlan>;

export const planCatalog = catalogKind<'plan_id', PlansTable, NewPlan>({
  noun: 'plan',
  table: 'plans',
  idColumn: 'plan_id',
  priceTerms: (input) => ({ amount: input.amount, currency: input.currency, recurring: { interval: input.interval, interval_count: input.interval_count } }),
  ownColumns: (input) => ({ interval: input.interval, interval_count: input.interval_count }),
  ownView: (p) => ({ interval: p.interval, interval_count: p.interval_count }),
});
