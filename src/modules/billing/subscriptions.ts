// Plans and our subscriptions to them. A subscription row is created before Stripe is called, so a
// Checkout Session or Stripe subscription of ours always names a row we know; Stripe's own state
// (status, period, cancellation) is kept by subscription-state.ts.
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { BillingDatabase, PlanRow, SubscriptionRow } from './tables.js';

export async function listPlans(db: Kysely<BillingDatabase>): Promise<PlanRow[]> {
  return db.selectFrom('plans').selectAll().where('active', '=', true).orderBy('amount').execute();
}

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
 * Our subscription that a Stripe object names: by our id in its metadata, else by the Stripe
 * subscription id once linked. Locked, so events about one subscription run one after the other.
 */
export async function lockSubscription(
  tx: Transaction<BillingDatabase>,
  names: { subscriptionId?: string | undefined; stripeSubscriptionId?: string | null | undefined },
): Promise<SubscriptionRow | undefined> {
  if (names.subscriptionId !== undefined) {
    return tx.selectFrom('subscriptions').selectAll().where('subscription_id', '=', names.subscriptionId).forUpdate().executeTakeFirst();
  }
  if (!names.stripeSubscriptionId) return undefined;
  return tx.selectFrom('subscriptions').selectAll().where('stripe_subscription_id', '=', names.stripeSubscriptionId).forUpdate().executeTakeFirst();
}

/**
 * Records the Checkout Session and the Stripe subscription of ours they name, the first time each
 * is learnt: an id once set is kept (coalesce), so a concurrent link (the API's answer and the
 * checkout event) cannot replace it.
 */
export async function linkSubscription(
  db: Kysely<BillingDatabase>,
  subscription: SubscriptionRow,
  ids: { checkoutSessionId?: string | null; stripeSubscriptionId?: string | null },
): Promise<void> {
  const checkout = subscription.checkout_session_id === null ? (ids.checkoutSessionId ?? null) : null;
  const stripe = subscription.stripe_subscription_id === null ? (ids.stripeSubscriptionId ?? null) : null;
  if (checkout === null && stripe === null) return;
  await db
    .updateTable('subscriptions')
    .set({
      checkout_session_id: sql`coalesce(checkout_session_id, ${checkout})`,
      stripe_subscription_id: sql`coalesce(stripe_subscription_id, ${stripe})`,
    })
    .where('subscription_id', '=', subscription.subscription_id)
    .execute();
}
