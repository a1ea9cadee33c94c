// The credits module's HTTP: what the selling application calls under /api (packages, checkout,
// orders) and the refund ops start under /admin/api. Bodies and path parameters are
// checked here, errors name the field and what is expected, and each domain outcome is mapped to
// its answer here and nowhere else.
import { Router } from 'express';
import { z } from 'zod';
import {
  badRequest,
  checkIdParam,
  countKeys,
  createThenCall,
  idempotencyKeyHeader,
  optionalEmail,
  optionalIdempotencyKey,
  runIdempotent,
  sendResult,
  stripeCallFailed,
  type HttpResult,
  type ModuleRouteContext,
} from '../../business-module.js';
import { catalogAdminRoutes } from '../catalog/index.js';
import { accountId } from '../ledger/index.js';
import { openCheckoutSession, type CheckoutDeps, type CheckoutOutcome } from './checkout.js';
import { createOrder, findOrder, listPackages } from './orders.js';
import { newPackage, packageCatalog } from './package-catalog.js';
import { createRefund, planRefund, type PlannedRefund, type RefundOutcome, type RefundPlan } from './refunds.js';
import type { CreditsSettings } from './settings.js';
import { withCreditTables } from './tables.js';

const checkoutBody = z.strictObject({
  package_id: z.string().regex(/^[a-z0-9_-]{1,64}$/, 'must be a package id from GET /api/packages'),
  account_id: accountId,
  email: optionalEmail,
});
const refundBody = z.strictObject({ amount: z.number().int().positive('must be a positive amount in the smallest currency unit').optional() });

export function creditsApiRoutes(context: ModuleRouteContext<CreditsSettings>): Router {
  const db = withCreditTables(context.db);
  const { checkoutSuccessUrl: successUrl, checkoutCancelUrl: cancelUrl } = context.settings;
  const checkout: CheckoutDeps = { db, stripeCalls: context.stripeCalls, wake: context.wake, successUrl, cancelUrl };
  const router = Router();
  router.param('id', checkIdParam);

  router.get('/packages', async (_req, res) => {
    const packages = await listPackages(db);
    res.json(packages.map((p) => ({ id: p.package_id, name: p.name, amount: p.amount, currency: p.currency, credits: p.credits, features: p.features })));
  });

  // Two idempotency layers meet here. Inbound, the caller's Idempotency-Key (a double-click, a
  // client retry) maps to one order and replays the first response. Outbound, the call to Stripe
  // carries a key derived from that order (checkout.ts).
  router.post('/checkout', async (req, res) => {
    const body = checkoutBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const key = optionalIdempotencyKey(req);
    if (!key.success) return badRequest(res, key.error);
    const input = { packageId: body.data.package_id, accountId: body.data.account_id, email: body.data.email ?? null };
    sendResult(
      res,
      await createThenCall(context.db, key.data, {
        operation: 'checkout',
        request: [input.packageId, input.accountId, input.email],
        leaseMs: context.idempotencyLeaseMs,
        async create(tx) {
          const order = await createOrder(withCreditTables(tx), input);
          if (!order) return unavailablePackage(await packageCatalog.find(tx, input.packageId), input.packageId);
          return { subject: { orderId: order.order_id } };
        },
        async complete({ orderId }: { orderId: string }) {
          const order = await findOrder(db, orderId);
          if (!order) throw new Error(`order ${orderId} of an idempotency key vanished`);
          return checkoutAnswer(orderId, await openCheckoutSession(checkout, order));
        },
      }),
    );
  });

  router.get('/orders/:id', async (req, res) => {
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

  return router;
}

export function creditsAdminRoutes(context: ModuleRouteContext<CreditsSettings>): Router {
  const db = withCreditTables(context.db);
  const router = Router();
  router.param('id', checkIdParam);
  router.use(catalogAdminRoutes(packageCatalog, newPackage, context));

  // The caller's Idempotency-Key is required: it fixes the refund's number and amount when first
  // seen, so a retried request never refunds twice. Its amount is held back in the same
  // transaction, so refunds asked at once never ask Stripe for more than the order (refunds.ts).
  router.post('/orders/:id/refund', async (req, res) => {
    const key = idempotencyKeyHeader.safeParse(req.headers['idempotency-key']);
    if (!key.success) {
      return void res.status(400).json({ error: 'an Idempotency-Key header is required, so that a retried refund request never refunds twice' });
    }
    const body = refundBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const orderId = req.params.id;
    sendResult(
      res,
      await runIdempotent(context.db, {
        key: key.data,
        operation: 'refund',
        // The refund's number is how many refund keys name the order: these keys are its records.
        counted: true,
        request: [orderId, body.data.amount ?? null],
        leaseMs: context.idempotencyLeaseMs,
        async register(tx) {
          const plan = await planRefund(withCreditTables(tx), orderId, body.data.amount, () => countKeys(tx, 'refund', { orderId }));
          return plan.outcome === 'planned' ? { subject: plan.refund } : refusedRefund(orderId, plan);
        },
        async execute(refund: PlannedRefund) {
          return refundAnswer(refund.orderId, await createRefund({ db, stripeCalls: context.stripeCalls }, refund));
        },
      }),
    );
  });

  return router;
}

/** Why no order was made: the package is archived (409), or was never in the catalog (400). */
function unavailablePackage(pkg: { active: boolean } | undefined, packageId: string): HttpResult {
  if (pkg) return { status: 409, body: { error: `package_id "${packageId}" is archived: it sells no more; GET /api/packages lists those on sale` } };
  return { status: 400, body: { error: `unknown package_id "${packageId}"; GET /api/packages lists them` } };
}

function checkoutAnswer(orderId: string, outcome: CheckoutOutcome): HttpResult {
  if (outcome.outcome !== 'created') return stripeCallFailed(outcome, 'create the checkout session', { order_id: orderId });
  return { status: 201, body: { order_id: orderId, checkout_session_id: outcome.checkoutSessionId, url: outcome.url } };
}

/**
 * Why a refund is not asked of Stripe. An amount over the order's can never be right (400); one
 * over what is left conflicts with the order's other refunds (409), and the answer says how much
 * may still be asked.
 */
function refusedRefund(orderId: string, plan: Exclude<RefundPlan, { outcome: 'planned' }>): HttpResult {
  switch (plan.outcome) {
    case 'order_not_found':
      return { status: 404, body: { error: 'order not found' } };
    case 'not_paid':
      return { status: 409, body: { error: 'order is not paid: there is nothing to refund' } };
    case 'amount_out_of_range':
      return { status: 400, body: { error: `amount must be at most the order's ${plan.orderAmount} ${plan.currency}` } };
    case 'exceeds_refundable': {
      const order = `order ${orderId} (${plan.orderAmount} ${plan.currency})`;
      const error =
        plan.left === 0
          ? `nothing is left to refund of ${order}: it is refunded, or other refunds have asked Stripe for all of it`
          : `amount ${plan.wanted} is more than the ${plan.left} ${plan.currency} left to refund of ${order}: the rest is refunded, or other refunds have asked Stripe for it; ask for at most ${plan.left}`;
      return { status: 409, body: { error, order_id: orderId, refundable_amount: plan.left } };
    }
  }
}

function refundAnswer(orderId: string, outcome: RefundOutcome): HttpResult {
  switch (outcome.outcome) {
    case 'created':
      return { status: 201, body: { order_id: orderId, refund_id: outcome.refundId, amount: outcome.amount, status: outcome.status } };
    case 'stripe_busy':
    case 'stripe_failed':
      return stripeCallFailed(outcome, 'create the refund', { order_id: orderId });
    default:
      // A retry after a failed call, whose amount other refunds have taken meanwhile.
      return refusedRefund(orderId, outcome);
  }
}
