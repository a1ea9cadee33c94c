// The entitlements' HTTP, under /api: what an app gates a feature on. An account's entitlements
// are the union of those of the Stripe customers linked to it; `as_of` is the Stripe time of the
// newest summary they reflect (null when none was ever applied). An unknown account has none.
import { Router } from 'express';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { badRequest, checkIdParam, type Database, type ModuleRouteContext } from '../../business-module.js';
import { accountId, customersOfAccount } from '../ledger/index.js';
import { withEntitlementTables } from './tables.js';

// Stripe's rule for a Feature's lookup_key: at most 80 characters.
const lookupKey = z.string().regex(/^[\x21-\x7e]{1,80}$/, "must be a Feature's lookup_key: 1-80 printable ASCII characters, no spaces");

interface AccountEntitlements {
  entitlements: Array<{ lookup_key: string; feature_id: string; name: string | null }>;
  as_of: string | null;
}

async function entitlementsOfAccount(db: Kysely<Database>, account: string): Promise<AccountEntitlements> {
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

export function entitlementsApiRoutes({ db }: ModuleRouteContext<unknown>): Router {
  const router = Router();
  router.param('id', checkIdParam);

  router.get('/accounts/:id/entitlements', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    res.json({ account_id: id.data, ...(await entitlementsOfAccount(db, id.data)) });
  });

  router.get('/accounts/:id/entitlements/:lookup_key', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const key = z.object({ lookup_key: lookupKey }).safeParse(req.params);
    if (!key.success) return badRequest(res, key.error);
    const { entitlements, as_of } = await entitlementsOfAccount(db, id.data);
    res.json({ account_id: id.data, lookup_key: key.data.lookup_key, active: entitlements.some((e) => e.lookup_key === key.data.lookup_key), as_of });
  });

  return router;
}
