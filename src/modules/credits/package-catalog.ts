// Packages as catalog items (src/modules/catalog/): the writes of the packages table, which this
// module owns. Amount, currency, credits and the Stripe Price never change once a package exists
// (sql/credits/0020's trigger): an order copies the first three, and checkout sells the Price.
import type { Kysely, Selectable } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../business-module.js';
import { catalogFields, changedColumns, type CatalogItem, type CatalogKind } from '../catalog/index.js';
import { withCreditTables, type PackagesTable } from './tables.js';

export const newPackage = z.strictObject(catalogFields);
export type NewPackage = z.infer<typeof newPackage>;

const view = (p: Selectable<PackagesTable>): CatalogItem => ({
  id: p.package_id, name: p.name, amount: p.amount, currency: p.currency, credits: p.credits, active: p.active, stripe_price_id: p.stripe_price_id,
});

const packages = (db: Kysely<Database>) => withCreditTables(db).selectFrom('packages').selectAll();

export const packageCatalog: CatalogKind<NewPackage> = {
  noun: 'package',
  priceTerms: (input) => ({ amount: input.amount, currency: input.currency, recurring: null }),
  list: async (db) => (await packages(db).orderBy('active', 'desc').orderBy('amount').orderBy('package_id').execute()).map(view),
  find: async (db, id) => {
    const row = await packages(db).where('package_id', '=', id).executeTakeFirst();
    return row && view(row);
  },
  findByPrice: async (db, priceId) => {
    const row = await packages(db).where('stripe_price_id', '=', priceId).executeTakeFirst();
    return row && view(row);
  },
  findByProduct: async (db, productId) => (await packages(db).where('stripe_product_id', '=', productId).orderBy('package_id').execute()).map(view),
  insert: async (db, input, stripeProductId) => {
    const row = await withCreditTables(db)
      .insertInto('packages')
      .values({ package_id: input.id, name: input.name, amount: input.amount, currency: input.currency, credits: input.credits, stripe_price_id: input.stripe_price_id ?? null, stripe_product_id: stripeProductId })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
    return row && view(row);
  },
  change: async (db, id, change) => {
    const columns = changedColumns(change);
    if (!columns) return packageCatalog.find(db, id);
    const row = await withCreditTables(db)
      .updateTable('packages')
      .set(columns)
      .where('package_id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && view(row);
  },
};
