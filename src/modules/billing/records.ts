// What the dashboard shows of billing beside an event: the subscription it names (our id in the
// metadata, or the Stripe subscription it is about) and the invoice grant it made; the events
// that search by our subscription id finds; and an account's subscriptions and paid periods.
import type { Kysely } from 'kysely';
import { payloadHolds, type AccountRecords, type BusinessRecord, type Database, type StripeEventRow } from '../../business-module.js';
import { stripeInvoice, SUBSCRIPTION_ID_KEY } from './stripe-schemas.js';
import { withBillingTables } from './tables.js';

export async function subscriptionOfEvent(db: Kysely<Database>, event: Pick<StripeEventRow, 'event_id' | 'object_id' | 'payload'>): Promise<BusinessRecord[]> {
  const billing = withBillingTables(db);
  const named = namedSubscriptions(event.payload);
  const subscriptions = await billing
    .selectFrom('subscriptions')
    .select(['subscription_id', 'status', 'plan_id', 'account_id', 'stripe_subscription_id', 'cancel_at_period_end', 'pause_behavior'])
    .where((eb) =>
      eb.or([
        ...(named.ours.length > 0 ? [eb('subscription_id', 'in', named.ours)] : []),
        ...(named.stripe.length > 0 ? [eb('stripe_subscription_id', 'in', named.stripe)] : []),
        eb('subscription_id', 'in', eb.selectFrom('invoice_grants').select('subscription_id').where('event_id', '=', event.event_id)),
      ]),
    )
    .execute();
  const grants = await billing
    .selectFrom('invoice_grants')
    .select(['invoice_id', 'subscription_id', 'credits', 'amount_paid', 'currency', 'revoked_credits'])
    .where('event_id', '=', event.event_id)
    .execute();
  return [
    ...subscriptions.map(({ subscription_id, ...fields }) => ({ kind: 'subscription', id: subscription_id, fields })),
    ...grants.map(({ invoice_id, ...fields }) => ({ kind: 'invoice grant', id: invoice_id, fields })),
  ];
}

/**
 * Our ids in the metadata of the object (or of its invoice's subscription), and Stripe subscription
 * ids it names. An invoice is read with the handlers' schema, which knows both of its shapes.
 */
function namedSubscriptions(payload: unknown): { ours: string[]; stripe: string[] } {
  const object = (payload as { data?: { object?: Record<string, unknown> } } | null)?.data?.object ?? {};
  const invoice = object.object === 'invoice' ? stripeInvoice.safeParse(object) : undefined;
  const details = invoice?.success ? invoice.data.subscription_details : null;
  const metadata = object.metadata as Record<string, unknown> | null | undefined;
  const strings = (...values: unknown[]) => values.filter((v): v is string => typeof v === 'string');
  return {
    ours: strings(metadata?.[SUBSCRIPTION_ID_KEY], details?.metadata?.[SUBSCRIPTION_ID_KEY]),
    stripe: strings(object.object === 'subscription' ? object.id : undefined, object.subscription, details?.subscription),
  };
}

/** Events that name the subscription in their metadata, are about its Stripe subscription, or granted one of its invoices. */
export async function eventsOfSubscription(db: Kysely<Database>, subscriptionId: string): Promise<string[]> {
  const billing = withBillingTables(db);
  const rows = await billing
    .selectFrom('stripe_events')
    .select('event_id')
    .where((eb) =>
      eb.or([
        payloadHolds(
          [
            ['data', 'object', 'metadata', SUBSCRIPTION_ID_KEY],
            ['data', 'object', 'parent', 'subscription_details', 'metadata', SUBSCRIPTION_ID_KEY],
            ['data', 'object', 'subscription_details', 'metadata', SUBSCRIPTION_ID_KEY],
          ],
          subscriptionId,
        ),
        eb(
          'object_id',
          'in',
          eb
            .selectFrom('subscriptions')
            .select('stripe_subscription_id')
            .where('subscription_id', '=', subscriptionId)
            .where('stripe_subscription_id', 'is not', null)
            .$narrowType<{ stripe_subscription_id: string }>(),
        ),
        eb('event_id', 'in', eb.selectFrom('invoice_grants').select('event_id').where('subscription_id', '=', subscriptionId)),
      ]),
    )
    .limit(50)
    .execute();
  return rows.map((row) => row.event_id);
}

/** The account's subscriptions, and the credits each paid period (invoice) granted and what was taken back of them. */
export async function subscriptionsOfAccount(db: Kysely<Database>, accountId: string, limit: number): Promise<AccountRecords> {
  const billing = withBillingTables(db);
  const [subscriptions, grants] = await Promise.all([
    billing
      .selectFrom('subscriptions')
      .select(['subscription_id', 'status', 'plan_id', 'stripe_subscription_id', 'current_period_end', 'cancel_at_period_end', 'pause_behavior'])
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute(),
    billing
      .selectFrom('invoice_grants')
      .select([
        'invoice_id',
        'subscription_id',
        'credits',
        'revoked_credits',
        'amount_paid',
        'currency',
        'refunded_amount',
        'billing_reason',
        'granted_at',
        'event_id',
      ])
      // Through the account's subscriptions, which subscriptions_account_idx and invoice_grants_subscription_idx serve.
      .where('subscription_id', 'in', billing.selectFrom('subscriptions').select('subscription_id').where('account_id', '=', accountId))
      .orderBy('granted_at', 'desc')
      .limit(limit)
      .execute(),
  ]);
  return {
    records: subscriptions.map(({ subscription_id, current_period_end, ...fields }) => ({
      kind: 'subscription',
      id: subscription_id,
      fields: { ...fields, current_period_end: current_period_end?.toISOString() ?? null },
    })),
    grants: grants.map((g) => ({
      for: 'period',
      id: g.invoice_id,
      credits: g.credits,
      taken_back: g.revoked_credits,
      amount: g.amount_paid,
      currency: g.currency,
      granted_at: g.granted_at,
      event_id: g.event_id,
      fields: { subscription_id: g.subscription_id, billing_reason: g.billing_reason, refunded_amount: g.refunded_amount },
    })),
  };
}
