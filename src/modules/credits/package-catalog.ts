// Packages as catalog items (src/modules/catalog/ writes them): the packages table, which this
// module owns. Amount, currency, credits and the Stripe Price never change once a package exists
// (sql/credits/0020's trigger): an order copies the first three, and checkout sells the Price.
import { z } from 'zod';
import { catalogFields, catalogKind } from '../catalog/index.js';
import type { PackagesTable } from './tables.js';

export const newPackage = z.strictObject(catalogFields);
export type NewPackage = z.infer<typeof newPackage>;

export const packageCatalog = catalogKind<'package_id', PackagesTable, NewPackage>({
  noun: 'package',
  table: 'packages',
  idColumn: 'package_id',
  priceTerms: (input) => ({ amount: input.amount, currency: input.currency, recurring: null }),
  ownColumns: () => ({}),
});
