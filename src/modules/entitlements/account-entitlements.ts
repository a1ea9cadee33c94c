// An account's entitlements: the union of the active entitlements of the Stripe customers linked
// to it (the ledger's customer-links.ts), by lookup_key; `as_of` is the Stripe time of the newest
// summary they reflect (null when none was ever applied). For the API and the dashboard's account view.
import type { Kysely } from 'kysely';
import type { AccountRecords, Database } from '../../business-module.js';
import { customersOfAccount } from '../ledger/index.js';
import { withEntitlementTables } from './tables.js';

export interface AccountEntitlements {
  entitlements: Array<{ lookup_key: string; feature_id: string; name: string | null }>;
  as_of: string | null;
}

/** What the account may use now; an unknown account has nothing, as of null. */
export async function entitlementsOfAccount(db: Kysely<Database>, account: string): Promise<AccountEntitlements> {
  const customers = await customersOfAccount(db, account);
  if (customers.length === 0) return { entitlements: [], as_of: null };
  const tables = withEntitlementTables(db);
  const [rows, summary] = await Promise.all([
    tables
      .selectFrom('customer_entitlements')
      .select(['lookup_key', 'feature_id', 'name'])
      .where('customer_id', 'in', customers)
      .orderBy('lookup_key')
      .orderBy('customer_id')
      .execute(),
    tables
      .selectFrom('entitlement_summaries')
      .select((eb) => eb.fn.max('as_of').as('as_of'))
      .where('customer_id', 'in', customers)
      .executeTakeFirst(),
  ]);
  // Two customers of one account may hold the same Feature: the account holds it once.
  const byKey = new Map(rows.map((row) => [row.lookup_key, row]));
  const asOf = summary?.as_of ? new Date(summary.as_of) : null;
  return { entitlements: [...byKey.values()], as_of: asOf?.toISOString() ?? null };
}

/** The dashboard's account view: each entitlement the account holds, as of the summary it reflects. */
export async function entitlementRecords(db: Kysely<Database>, account: string, limit: number): Promise<AccountRecords> {
  const { entitlements, as_of } = await entitlementsOfAccount(db, account);
  return {
    records: entitlements
      .slice(0, limit)
      .map(({ lookup_key, feature_id, name }) => ({ kind: 'entitlement', id: lookup_key, fields: { feature_id, name, as_of } })),
  };
}
