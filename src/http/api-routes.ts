// /api/*: what the selling application calls. Bearer API_TOKEN. Bodies and path parameters are
// checked here and errors name the field and what is expected.
import express, { Router } from 'express';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { startCheckout, type CheckoutDeps } from '../checkout/start-checkout.js';
import type { Database } from '../db/schema.js';
import { consumeCredit, getQuota } from '../fulfilment/account-quota.js';
import { findOrder, listPackages } from '../fulfilment/orders.js';
import { requireBearer } from './auth.js';
import { sendResult } from './idempotent-request.js';
import { badRequest, checkIdParam, idempotencyKeyHeader } from './validation.js';

export interface ApiDeps extends CheckoutDeps {
  db: Kysely<Database>;
  apiToken: string;
}

// Account ids are the caller's own user ids: any short printable token.
const accountId = z.string().regex(/^[\w.@:-]{1,128}$/, 'must be 1-128 letters, digits or . _ @ : -');
const checkoutBody = z.strictObject({
  package_id: z.string().regex(/^[a-z0-9_-]{1,64}$/, 'must be a package id from GET /api/packages'),
  account_id: accountId,
  email: z.email('must be an email address').max(254).optional(),
});

export function apiRoutes(deps: ApiDeps): Router {
  const { db } = deps;
  const router = Router();
  router.use('/api', requireBearer(deps.apiToken, 'api'), express.json({ limit: '16kb' }));
  router.param('id', checkIdParam);

  router.get('/api/packages', async (_req, res) => {
    const packages = await listPackages(db);
    res.json(packages.map((p) => ({ id: p.package_id, name: p.name, amount: p.amount, currency: p.currency, credits: p.credits })));
  });

  router.post('/api/checkout', async (req, res) => {
    const body = checkoutBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const rawKey = req.headers['idempotency-key'];
    let key: string | undefined;
    if (rawKey !== undefined) {
      const parsed = idempotencyKeyHeader.safeParse(rawKey);
      if (!parsed.success) return badRequest(res, parsed.error);
      key = parsed.data;
    }
    sendResult(res, await startCheckout(deps, body.data, key));
  });

  router.get('/api/orders/:id', async (req, res) => {
    const order = await findOrder(db, req.params.id);
    if (!order) return void res.status(404).json({ error: 'order not found' });
    res.json({
      order_id: order.order_id,
      status: order.status,
      package_id: order.package_id,
      account_id: order.account_id,
      credits: order.credits,
      amount: order.amount,
      currency: order.currency,
      checkout_session_id: order.checkout_session_id,
    });
  });

  router.get('/api/accounts/:id/quota', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    res.json(await getQuota(db, id.data));
  });

  router.post('/api/accounts/:id/runs', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const consumed = await consumeCredit(db, id.data);
    if (!consumed) return void res.status(402).json({ error: 'no credits left: buy a package via POST /api/checkout' });
    res.status(201).json(consumed);
  });

  return router;
}
