// Which subscription of an account bills its runs by usage: the usage module reads it
// (src/modules/usage/) to record a run as usage instead of drawing credits (docs/billing.md,
// "Usage-billed plans"). Active means what Stripe says (status active or trialing) of a
// subscription linked by its own checkout, which also stored the customer a meter event bills.
import type { Kysely } from 'kysely';
import type { Database } from '../../business-module.js';
import { withBillingTables } from './tables.js';

export interface MeteredSubscription {
  subscriptionId: string;
  stripeCustomerId: string;
  eventName: string;
}

/** Stripe bills a metered price's usage in these states; past_due and the rest end or suspend it. */
const BILLING_STATUSES = ['active', 'trialing'];

/** The account's newest active subscription to a usage-billed plan, or undefined. */
export async function activeMeteredSubscription(db: Kysely<Database>, accountId: string): Promise<MeteredSubscription | undefined> {
  const row = await withBillingTables(db)
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.plan_id', 'subscriptions.plan_id')
    .select(['subscriptions.subscription_id', 'subscriptions.stripe_customer_id', 'plans.meter_event_name'])
    .where('subscriptions.account_id', '=', accountId)
    .where('subscriptions.status', 'in', BILLING_STATUSES)
    .where('subscriptions.stripe_customer_id', 'is not', null)
    .where('plans.meter_event_name', 'is not', null)
    .orderBy('subscriptions.created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row?.stripe_customer_id || !row.meter_event_name) return undefined;
  return { subscriptionId: row.subscription_id, stripeCustomerId: row.stripe_customer_id, eventName: row.meter_event_name };
}
