// Events that keep our subscription true to Stripe; none of them grants (invoice.paid does, in
// invoice-paid.ts). checkout.session.completed of the Checkout Session we opened links our row to
// Stripe's subscription, and nothing else does (subscription-links.ts), and its customer to our
// account (the ledger's customer-links.ts); customer.subscription.
// created|updated|deleted carry the subscription itself; invoice.payment_failed means the status
// is changing, so the subscription is fetched from Stripe.
import { objectOf, type EventHandler, type Notifications, type Wake } from '../../business-module.js';
import { linkCustomer } from '../ledger/index.js';
import { stripeInvoice, stripeSubscription, subscriptionCheckoutSession, SUBSCRIPTION_ID_KEY } from './stripe-schemas.js';
import { linkCheckoutSession, lockLinkedSubscription } from './subscription-links.js';
import { applyState, requestRefresh, stateOf } from './subscription-state.js';
import { withBillingTables } from './tables.js';

const notOurs = (what: string) => ({ status: 'ignored' as const, reason: `${what} was not started by POST /api/subscriptions` });

export const subscriptionChanged =
  (notifications: Notifications): EventHandler =>
  async (transaction, event) => {
    const tx = withBillingTables(transaction);
    const object = objectOf(stripeSubscription, event);
    const subscription = await lockLinkedSubscription(tx, object.id, object.metadata?.[SUBSCRIPTION_ID_KEY]);
    if (!subscription) return notOurs(`Stripe subscription ${object.id}`);
    const change = await applyState(tx, subscription, stateOf(object), event.stripe_created_at, { source: 'event', eventId: event.event_id, notifications });
    if (change === 'tie') await requestRefresh(tx, subscription, object.id);
    return { status: 'processed' };
  };

export const subscriptionCheckoutCompleted =
  (wake: Wake): EventHandler =>
  async (transaction, event) => {
    const session = objectOf(subscriptionCheckoutSession, event);
    if (session.mode !== 'subscription') return { status: 'ignored' };
    const tx = withBillingTables(transaction);
    const subscription = await linkCheckoutSession(tx, wake, {
      id: session.id,
      subscription: session.subscription,
      customer: session.customer ?? null,
      named: session.metadata?.[SUBSCRIPTION_ID_KEY],
    });
    if (!subscription) return notOurs(`subscription Checkout Session ${session.id}`);
    // The session's customer is the account's too: its entitlements become the account's.
    if (session.customer) await linkCustomer(tx, wake, { customerId: session.customer, accountId: subscription.account_id, checkoutSessionId: session.id });
    return { status: 'processed' };
  };

export const invoicePaymentFailed: EventHandler = async (transaction, event) => {
  const invoice = objectOf(stripeInvoice, event);
  const details = invoice.subscription_details;
  if (!details) return { status: 'ignored', reason: 'not a subscription invoice' };
  const tx = withBillingTables(transaction);
  const subscription = await lockLinkedSubscription(tx, details.subscription, details.metadata?.[SUBSCRIPTION_ID_KEY]);
  if (!subscription) return notOurs(`Stripe subscription ${details.subscription}`);
  await requestRefresh(tx, subscription, details.subscription);
  return { status: 'processed' };
};
