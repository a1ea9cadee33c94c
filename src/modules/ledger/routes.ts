// The ledger's HTTP, under /api: an account's quota, and using it one run at a time. The quota
// counts every grant, whichever module sold it (a package, a subscription's paid period).
import { Router } from 'express';
import { badRequest, checkIdParam, type ModuleRouteContext } from '../../business-module.js';
import { consumeCredit, getQuota } from './account-credits.js';
import { accountId } from './account-id.js';

export function ledgerApiRoutes({ db }: ModuleRouteContext<unknown>): Router {
  const router = Router();
  router.param('id', checkIdParam);

  router.get('/accounts/:id/quota', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    res.json(await getQuota(db, id.data));
  });

  router.post('/accounts/:id/runs', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const consumed = await consumeCredit(db, id.data);
    if (!consumed) return void res.status(402).json({ error: 'no credits left: buy a package via POST /api/checkout' });
    res.status(201).json(consumed);
  });

  return router;
}
