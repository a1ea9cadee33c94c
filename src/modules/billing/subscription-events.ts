// Events that keep our subscription true to Stripe; none of them grants (invoice.paid does, in
// invoice-paid.ts). customer.subscription.created|updated|deleted carry the subscription itself;
// checkout.session.completed links our row to Stripe's subscription; invoice.payment_failed means
// the status is changing, so the subscription is fetched from Stripe.
import { PermanentError, type EventHandler } from '../../fulfilment/handler.js';
import { objectOf } from '../../stripe/stripe-objects.js';
import { stripeInvoice, stripeSubscription, subscriptionCheckoutSession, SUBSCRIPTION_ID_KEY } from './stripe-objects.js';
import { applyState, requestRefresh, stateOf } from './subscription-state.js';
import { linkSubscription, lockSubscription } from './subscriptions.js';
import { withBillingTables, type SubscriptionRow } from './tables.js';

const notOurs = (what: string) => ({ status: 'ignored' as const, reason: `${what} was not started by POST /api/subscriptions` });
const unknown = (subscriptionId: string) => new PermanentError(`unknown subscription ${subscriptionId} in metadata.${SUBSCRIPTION_ID_KEY}`);

/** A Stripe object that names our id must find our row; one that names none may be someone else's. */
function mustExist(row: SubscriptionRow | undefined, subscriptionId: string | undefined): SubscriptionRow | undefined {
  if (!row && subscriptionId !== undefined) throw unknown(subscriptionId);
  return row;
}

export const subscriptionChanged: EventHandler = async (transaction, event) => {
  const tx = withBillingTables(transaction);
  const object = objectOf(stripeSubscription, event);
  const subscriptionId = object.metadata?.[SUBSCRIPTION_ID_KEY];
  const subscription = mustExist(await lockSubscription(tx, { subscriptionId, stripeSubscriptionId: object.id }), subscriptionId);
  if (!subscription) return notOurs(`Stripe subscription ${object.id}`);
  await linkSubscription(tx, subscription, { stripeSubscriptionId: object.id });
  const change = await applyState(tx, subscription, stateOf(object), event.stripe_created_at, 'event');
  if (change === 'tie') await requestRefresh(tx, subscription, object.id);
  return { status: 'processed' };
};

export const subscriptionCheckoutCompleted: EventHandler = async (transaction, event) => {
  const session = objectOf(subscriptionCheckoutSession, event);
  if (session.mode !== 'subscription') return { status: 'ignored' };
  const tx = withBillingTables(transaction);
  const subscriptionId = session.metadata?.[SUBSCRIPTION_ID_KEY];
  const subscription = mustExist(await lockSubscription(tx, { subscriptionId }), subscriptionId);
  if (!subscription) return notOurs(`subscription Checkout Session ${session.id}`);
  await linkSubscription(tx, subscription, { checkoutSessionId: session.id, stripeSubscriptionId: session.subscription });
  return { status: 'processed' };
};

export const invoicePaymentFailed: EventHandler = async (transaction, event) => {
  const invoice = objectOf(stripeInvoice, event);
  const details = invoice.subscription_details;
  if (!details) return { status: 'ignored', reason: 'not a subscription invoice' };
  const tx = withBillingTables(transaction);
  const subscriptionId = details.metadata?.[SUBSCRIPTION_ID_KEY];
  const subscription = mustExist(await lockSubscription(tx, { subscriptionId, stripeSubscriptionId: details.subscription }), subscriptionId);
  if (!subscription) return notOurs(`Stripe subscription ${details.subscription}`);
  await requestRefresh(tx, subscription, details.subscription);
  return { status: 'processed' };
};
