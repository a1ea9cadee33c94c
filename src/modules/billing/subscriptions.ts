// Plans and our subscriptions to them. A subscription row is created before Stripe is called, so a
// Checkout Session or Stripe subscription of ours always names a row we know; which Stripe
// subscription is ours is decided by subscription-links.ts, Stripe's own state (status, period,
// cancellation) kept by subscription-state.ts.
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database, Wake } from '../../business-module.js';
import { withBillingTables, type BillingDatabase, type PlanRow, type SubscriptionRow } from './tables.js';

export async function listPlans(db: Kysely<BillingDatabase>): Promise<PlanRow[]> {
  return db.selectFrom('plans').selectAll().where('active', '=', true).orderBy('amount').execute();
}

/** What an event of a Stripe subscription that is not linked yet waits for: the link (subscription-links.ts). */
export const linkWaitKey = (stripeSubscriptionId: string) => `stripe_subscription:${stripeSubscriptionId}`;
/** What a refund that names an invoice (older API versions) waits for: the invoice's grant. */
export const invoiceWaitKey = (invoiceId: string) => `invoice:${invoiceId}`;
/** What a checkout.session.completed that names a subscription without its session id waits for. */
export const sessionWaitKey = (subscriptionId: string) => `subscription:${subscriptionId}`;

const newSubscriptionId = () => `subscr_${randomUUID().replaceAll('-', '')}`;

/** Creates a pending subscription priced from the plan, or returns undefined for an unknown plan. */
export async function createSubscription(
  db: Kysely<BillingDatabase>,
  input: { planId: string; accountId: string; email: string | null },
): Promise<SubscriptionRow | undefined> {
  const plan = await db.selectFrom('plans').selectAll().where('plan_id', '=', input.planId).where('active', '=', true).executeTakeFirst();
  if (!plan) return undefined;
  return db
    .insertInto('subscriptions')
    .values({
      subscription_id: newSubscriptionId(),
      plan_id: plan.plan_id,
      account_id: input.accountId,
      email: input.email,
      amount: plan.amount,
      currency: plan.currency,
      credits: plan.credits,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findSubscription(db: Kysely<BillingDatabase>, subscriptionId: string): Promise<SubscriptionRow | undefined> {
  return db.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirst();
}

/**
 * Whether a Checkout Session POST /api/subscriptions opened since `since` has not completed yet:
 * its completion would link a Stripe customer to one of our accounts (the ledger's
 * customer-links.ts), so an event about a customer we do not know may be waiting for it.
 */
export async function subscriptionCheckoutOpenSince(db: Kysely<Database>, since: Date): Promise<boolean> {
  const open = await withBillingTables(db)
    .selectFrom('subscriptions')
    .select('subscription_id')
    .where('checkout_session_id', 'is not', null)
    .where('stripe_subscription_id', 'is', null)
    .where('created_at', '>', since)
    .limit(1)
    .executeTakeFirst();
  return open !== undefined;
}

/** Our subscription, locked, so that whatever changes it (events, a refresh, a cancel) runs one after the other. */
export async function lockSubscription(tx: Transaction<BillingDatabase>, subscriptionId: string): Promise<SubscriptionRow | undefined> {
  return tx.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).forUpdate().executeTakeFirst();
}

/**
 * Stores the id of the Checkout Session that POST /api/subscriptions opened, as soon as Stripe
 * answers: that session's completion is the only thing that links the row to a Stripe
 * subscription (subscription-links.ts). An id once stored is kept: every retry sends the same
 * outbound key, so Stripe answers with the same session. The session's completion may have
 * arrived first and wait for it: woken in the same transaction.
 */
export async function storeCheckoutSession(db: Kysely<BillingDatabase>, subscriptionId: string, checkoutSessionId: string, wake: Wake): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const stored = await tx
      .updateTable('subscriptions')
      .set({ checkout_session_id: checkoutSessionId })
      .where('subscription_id', '=', subscriptionId)
      .where('checkout_session_id', 'is', null)
      .executeTakeFirst();
    if (stored.numUpdatedRows > 0n) await wake(tx, [sessionWaitKey(subscriptionId)]);
  });
}

/** The Stripe Features the plan subscribed through this Checkout Session grants; undefined for a session no subscription of ours opened. */
export async function planFeaturesOfCheckoutSession(db: Kysely<Database>, checkoutSessionId: string): Promise<string[] | undefined> {
  const row = await withBillingTables(db)
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.plan_id', 'subscriptions.plan_id')
    .select('plans.features')
    .where('subscriptions.checkout_session_id', '=', checkoutSessionId)
    .executeTakeFirst();
  return row?.features;
}
