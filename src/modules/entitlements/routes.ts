// The entitlements' HTTP, under /api: what an app gates a feature on (account-entitlements.ts).
import { Router } from 'express';
import { z } from 'zod';
import { badRequest, checkIdParam, type ModuleRouteContext } from '../../business-module.js';
import { accountId } from '../ledger/index.js';
import { entitlementsOfAccount } from './account-entitlements.js';

// Stripe's rule for a Feature's lookup_key: at most 80 characters.
const lookupKey = z.string().regex(/^[\x21-\x7e]{1,80}$/, "must be a Feature's lookup_key: 1-80 printable ASCII characters, no spaces");

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
