// Plans as catalog items (src/modules/catalog/): the writes of the plans table, which this module
// owns. Amount, currency, credits, the period and the Stripe Price never change once a plan exists
// (sql/billing/0021's trigger): a subscription copies the first three, and checkout bills the rest.
import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../business-module.js';
import { catalogFields, changedColumns, checkPlanPeriod, planPeriodFields, type CatalogItem, type CatalogKind } from '../catalog/index.js';
import { withBillingTables, type PlansTable } from './tables.js';

export const newPlan = z.strictObject({ ...catalogFields, ...planPeriodFields }).superRefine(checkPlanPeriod);
export type NewPlan = z.infer<typeof newPlan>;

const view = (p: Selectable<PlansTable>): CatalogItem => ({
  id: p.plan_id, name: p.name, amount: p.amount, currency: p.currency, credits: p.credits, active: p.active, stripe_price_id: p.stripe_price_id,
  interval: p.interval, interval_count: p.interval_count,
});

const plans = (db: Kysely<Database>) => withBillingTables(db).selectFrom('plans').selectAll();

export const planCatalog: CatalogKind<NewPlan> = {
  noun: 'plan',
  priceTerms: (input) => ({ amount: input.amount, currency: input.currency, recurring: { interval: input.interval, interval_count: input.interval_count } }),
  list: async (db) => (await plans(db).orderBy('active', 'desc').orderBy('amount').orderBy('plan_id').execute()).map(view),
  find: async (db, id) => {
    const row = await plans(db).where('plan_id', '=', id).executeTakeFirst();
    return row && view(row);
  },
  findByPrice: async (db, priceId) => {
    const row = await plans(db).where('stripe_price_id', '=', priceId).executeTakeFirst();
    return row && view(row);
  },
  findByProduct: async (db, productId) => (await plans(db).where('stripe_product_id', '=', productId).orderBy('plan_id').execute()).map(view),
  insert: async (db, input, stripeProductId) => {
    const row = await withBillingTables(db)
      .insertInto('plans')
      .values({
        plan_id: input.id, name: input.name, amount: input.amount, currency: input.currency, credits: input.credits,
        interval: input.interval, interval_count: input.interval_count, stripe_price_id: input.stripe_price_id ?? null, stripe_product_id: stripeProductId,
      })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
    return row && view(row);
  },
  change: async (db, id, change) => {
    const columns = changedColumns(change);
    if (!columns) return planCatalog.find(db, id);
    const row = await withBillingTables(db)
      .updateTable('plans')
      .set(columns)
      .where('plan_id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && view(row);
  },
};
