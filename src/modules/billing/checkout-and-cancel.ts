// Billing's calls to Stripe, opening a subscription's Checkout Session and cancelling it at period
// end, each with an Idempotency-Key derived from our subscription
// (docs/design.md, invariant 9): every retry of the same operation, from any process, does it once.
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { Notifications, StripeCallFailure, StripeCalls, Wake } from '../../business-module.js';
import { stripeSubscription, SUBSCRIPTION_ID_KEY } from './stripe-schemas.js';
import { applyState, requestRefresh, stateOf } from './subscription-state.js';
import { lockSubscription, storeCheckoutSession } from './subscriptions.js';
import type { BillingDatabase, SubscriptionRow } from './tables.js';

const subscriptionCheckoutKey = (subscriptionId: string) => `checkout-session:${subscriptionId}`;
const subscriptionCancelKey = (subscriptionId: string) => `subscription-cancel:${subscriptionId}`;
// A cancel after a resume we hold: named by the second of that state, so its own retries share it.
const cancelAfterResumeKey = (subscriptionId: string, resumedAt: Date) => `${subscriptionCancelKey(subscriptionId)}:after:${resumedAt.getTime() / 1000}`;

export interface BillingCallDeps {
  db: Kysely<BillingDatabase>;
  stripeCalls: StripeCalls;
  /** A cancel's new state is told to the app (subscription.updated) in the transaction that applies it. */
  notifications: Notifications;
  /** Wakes a session's completion that arrived before its id was stored. */
  wake: Wake;
  successUrl: string;
  cancelUrl: string;
}

export type SubscriptionCheckoutOutcome = { outcome: 'created'; checkoutSessionId: string; url: string | null } | StripeCallFailure;

/**
 * The Checkout Session that starts the subscription, the plan as a recurring price. Our id
 * goes in the session's metadata and, through subscription_data, in the subscription's, which
 * Stripe copies to each of its invoices: every event of this subscription names our row. The
 * session's id is stored as soon as Stripe answers: its completion is what links the Stripe
 * subscription to ours (subscription-links.ts); the metadata is only checked against that link.
 */
export async function openSubscriptionCheckout(deps: BillingCallDeps, subscription: SubscriptionRow): Promise<SubscriptionCheckoutOutcome> {
  const plan = await deps.db
    .selectFrom('plans')
    .select(['name', 'interval', 'interval_count', 'stripe_price_id', 'meter_event_name'])
    .where('plan_id', '=', subscription.plan_id)
    .executeTakeFirstOrThrow();
  const metadata = { [SUBSCRIPTION_ID_KEY]: subscription.subscription_id };
  const call = await deps.stripeCalls.attempt('subscription_checkout_session_create', (stripe) =>
    stripe.checkout.sessions.create(
      {
        mode: 'subscription',
        // The plan's Stripe Price when it names one (checked against the plan when it was created,
        // and never changed since); else the plan inline, at the subscription's snapshot. Stripe
        // refuses a quantity on a metered Price's line item: its meter says what is billed.
        line_items: [
          plan.stripe_price_id === null
            ? {
                quantity: 1,
                price_data: {
                  currency: subscription.currency,
                  unit_amount: subscription.amount,
                  recurring: { interval: plan.interval, interval_count: plan.interval_count },
                  product_data: { name: plan.name },
                },
              }
            : { price: plan.stripe_price_id, ...(plan.meter_event_name === null && { quantity: 1 }) },
        ],
        metadata,
        subscription_data: { metadata },
        client_reference_id: subscription.subscription_id,
        ...(subscription.email && { customer_email: subscription.email }),
        success_url: deps.successUrl,
        cancel_url: deps.cancelUrl,
      },
      { idempotencyKey: subscriptionCheckoutKey(subscription.subscription_id) },
    ),
  );
  if (call.outcome !== 'done') return call;
  await storeCheckoutSession(deps.db, subscription.subscription_id, call.value.id, deps.wake);
  return { outcome: 'created', checkoutSessionId: call.value.id, url: call.value.url };
}

// Stripe refuses to change these (a 400 we would pass on as a 502 to retry, in vain): a cancel of
// one answers with what we hold, without a call.
const ENDED = new Set(['canceled', 'incomplete_expired']);

export type CancelOutcome = { outcome: 'canceling'; subscription: SubscriptionRow } | { outcome: 'not_linked' } | StripeCallFailure;

/**
 * Cancels at the end of the period through Stripe. The state Stripe answers with is applied like a
 * fetch (as of when the call began), so the answer is right at once and a later event still wins.
 *
 * A repeat within Stripe's idempotency window gets the first call's answer back
 * (Idempotent-Replayed): a state as of then, older than what events may have brought since, so it
 * is not applied, and the answer is the state we hold. If that state is no longer canceling, the
 * first cancel was undone since (the customer resumed in Stripe's portal, say): replaying it would
 * leave the subscription to renew while we answer 200, so this is a new cancel, under a key named
 * by the resumed state. Setting cancel_at_period_end again is harmless at Stripe, so a spare call
 * (our answer to the first one was lost) costs nothing.
 */
export async function cancelAtPeriodEnd(
  deps: Pick<BillingCallDeps, 'db' | 'stripeCalls' | 'notifications'>,
  subscription: SubscriptionRow,
): Promise<CancelOutcome> {
  const stripeId = subscription.stripe_subscription_id;
  if (stripeId === null) return { outcome: 'not_linked' };
  if (ENDED.has(subscription.status)) return { outcome: 'canceling', subscription };
  const first = await requestCancel(deps, subscription.subscription_id, stripeId, subscriptionCancelKey(subscription.subscription_id));
  if (first.outcome !== 'canceling' || !first.replayed) return first;
  const held = first.subscription;
  if (held.cancel_at_period_end || held.stripe_state_at === null || ENDED.has(held.status)) return first;
  return requestCancel(deps, held.subscription_id, stripeId, cancelAfterResumeKey(held.subscription_id, held.stripe_state_at));
}

async function requestCancel(
  deps: Pick<BillingCallDeps, 'db' | 'stripeCalls' | 'notifications'>,
  subscriptionId: string,
  stripeId: string,
  idempotencyKey: string,
): Promise<{ outcome: 'canceling'; subscription: SubscriptionRow; replayed: boolean } | StripeCallFailure> {
  const began = new Date();
  const call = await deps.stripeCalls.attempt('subscription_cancel', (stripe): Promise<Stripe.Response<Stripe.Subscription>> =>
    stripe.subscriptions.update(stripeId, { cancel_at_period_end: true }, { idempotencyKey }),
  );
  if (call.outcome !== 'done') return call;
  const replayed = call.value.lastResponse.headers['idempotent-replayed'] === 'true';
  const updated = await deps.db.transaction().execute(async (tx) => {
    const row = await lockSubscription(tx, subscriptionId);
    if (!row) throw new Error(`subscription ${subscriptionId} is no longer stored`);
    if (replayed) return row;
    const change = await applyState(tx, row, stateOf(stripeSubscription.parse(call.value)), began, {
      source: 'fetch',
      eventId: null,
      notifications: deps.notifications,
    });
    if (change === 'tie') await requestRefresh(tx, row, stripeId, 1);
    return tx.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();
  });
  return { outcome: 'canceling', subscription: updated, replayed };
}
