// The billing module's HTTP, under /api: plans, starting a subscription (Checkout in subscription
// mode), reading one, cancelling at period end. The same conventions as the package checkout:
// bodies and ids checked here with errors that name the field, the caller's Idempotency-Key
// honoured on the POST that creates, and each domain outcome mapped to its answer here only.
import { Router, type Response } from 'express';
import { z } from 'zod';
import {
  badRequest,
  checkIdParam,
  createThenCall,
  optionalEmail,
  optionalIdempotencyKey,
  sendResult,
  stripeCallFailed,
  type HttpResult,
  type ModuleRouteContext,
} from '../../business-module.js';
import { catalogAdminRoutes } from '../catalog/index.js';
import { accountId } from '../ledger/index.js';
import { newPlan, planCatalog } from './plan-catalog.js';
import type { BillingSettings } from './settings.js';
import { cancelAtPeriodEnd, openSubscriptionCheckout, type BillingCallDeps, type SubscriptionCheckoutOutcome } from './checkout-and-cancel.js';
import { createSubscription, findSubscription, listPlans } from './subscriptions.js';
import { withBillingTables, type SubscriptionRow } from './tables.js';

const subscriptionBody = z.strictObject({
  plan_id: z.string().regex(/^[a-z0-9_-]{1,64}$/, 'must be a plan id from GET /api/plans'),
  account_id: accountId,
  email: optionalEmail,
});

export function billingApiRoutes(context: ModuleRouteContext<BillingSettings>): Router {
  const db = withBillingTables(context.db);
  const { checkoutSuccessUrl: successUrl, checkoutCancelUrl: cancelUrl } = context.settings;
  const calls: BillingCallDeps = { db, stripeCalls: context.stripeCalls, notifications: context.notifications, wake: context.wake, successUrl, cancelUrl };
  const router = Router();
  router.param('id', checkIdParam);

  router.get('/plans', async (_req, res) => {
    const plans = await listPlans(db);
    res.json(
      plans.map((p) => ({
        id: p.plan_id,
        name: p.name,
        amount: p.amount,
        currency: p.currency,
        interval: p.interval,
        interval_count: p.interval_count,
        credits: p.credits,
        features: p.features,
      })),
    );
  });

  router.post('/subscriptions', async (req, res) => {
    const body = subscriptionBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const key = optionalIdempotencyKey(req);
    if (!key.success) return badRequest(res, key.error);
    const input = { planId: body.data.plan_id, accountId: body.data.account_id, email: body.data.email ?? null };
    sendResult(
      res,
      await createThenCall(context.db, key.data, {
        operation: 'subscription',
        request: [input.planId, input.accountId, input.email],
        leaseMs: context.idempotencyLeaseMs,
        async create(tx) {
          const subscription = await createSubscription(withBillingTables(tx), input);
          if (!subscription) return unavailablePlan(await planCatalog.find(tx, input.planId), input.planId);
          return { subject: { subscriptionId: subscription.subscription_id } };
        },
        async complete({ subscriptionId }: { subscriptionId: string }) {
          const subscription = await findSubscription(db, subscriptionId);
          if (!subscription) throw new Error(`subscription ${subscriptionId} of an idempotency key vanished`);
          return checkoutAnswer(subscriptionId, await openSubscriptionCheckout(calls, subscription));
        },
      }),
    );
  });

  router.get('/subscriptions/:id', async (req, res) => {
    const subscription = await findSubscription(db, req.params.id);
    if (!subscription) return notFound(res);
    res.json(subscriptionView(subscription));
  });

  // Repeating a cancel is harmless: Stripe gets the same request with the same key (a new one
  // only once the subscription was resumed since: checkout-and-cancel.ts).
  router.post('/subscriptions/:id/cancel', async (req, res) => {
    const subscription = await findSubscription(db, req.params.id);
    if (!subscription) return notFound(res);
    const outcome = await cancelAtPeriodEnd(calls, subscription);
    if (outcome.outcome === 'not_linked') {
      return void res.status(409).json({ error: 'the subscription has no Stripe subscription yet (its checkout is not completed): nothing to cancel' });
    }
    if (outcome.outcome !== 'canceling')
      return sendResult(res, stripeCallFailed(outcome, 'cancel the subscription', { subscription_id: subscription.subscription_id }));
    res.json(subscriptionView(outcome.subscription));
  });

  return router;
}

/** The plan operators manage under /admin/api/plans (src/modules/catalog/). */
export function billingAdminRoutes(context: ModuleRouteContext<BillingSettings>): Router {
  return catalogAdminRoutes(planCatalog, newPlan, context);
}

/** Why no subscription was made: the plan is archived (409), or was never in the catalog (400). */
function unavailablePlan(plan: { active: boolean } | undefined, planId: string): HttpResult {
  if (plan) return { status: 409, body: { error: `plan_id "${planId}" is archived: it sells no more; GET /api/plans lists those on sale` } };
  return { status: 400, body: { error: `unknown plan_id "${planId}"; GET /api/plans lists them` } };
}

function checkoutAnswer(subscriptionId: string, outcome: SubscriptionCheckoutOutcome): HttpResult {
  if (outcome.outcome !== 'created') return stripeCallFailed(outcome, 'create the checkout session', { subscription_id: subscriptionId });
  return { status: 201, body: { subscription_id: subscriptionId, checkout_session_id: outcome.checkoutSessionId, url: outcome.url } };
}

function subscriptionView(subscription: SubscriptionRow) {
  return {
    subscription_id: subscription.subscription_id,
    status: subscription.status,
    plan_id: subscription.plan_id,
    account_id: subscription.account_id,
    checkout_session_id: subscription.checkout_session_id,
    stripe_subscription_id: subscription.stripe_subscription_id,
    current_period_end: subscription.current_period_end,
    cancel_at_period_end: subscription.cancel_at_period_end,
    pause_collection: subscription.pause_behavior === null ? null : { behavior: subscription.pause_behavior, resumes_at: subscription.pause_resumes_at },
  };
}

const notFound = (res: Response) => void res.status(404).json({ error: 'subscription not found' });
