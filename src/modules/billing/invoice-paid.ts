// invoice.paid is the one source of truth for subscription fulfilment: it grants the plan's
// credits, once per invoice. The invoice is the business key (invoice_grants' primary key), so a
// second Event object for one invoice, a resend after prune or a replay grant nothing more.
// invoice.payment_succeeded, charge.succeeded and payment_intent.succeeded tell of the same
// payment and never grant.
//
// Which invoices grant (docs/billing.md): billing_reason 'subscription_create' (the first
// period) and 'subscription_cycle' (each renewal). Prorations ('subscription_update'), manual and
// threshold invoices end 'ignored' with the reason. An invoice for nothing (a trial, a 100 %
// coupon) grants nothing: credits come with paid periods. One paid from the customer's credit
// balance grants: its period is paid. A grant is told to the app as subscription.period_paid in
// the same transaction (docs/notifications.md).
import type { Transaction } from 'kysely';
import { lockWaitKeys, objectOf, PermanentError, RetryLaterError, type EventHandler, type HandlerContext, type Wake } from '../../business-module.js';
import { addGrants, notifyAccounts, paymentWaitKey } from '../ledger/index.js';
import { stripeInvoice, stripeInvoicePayment, SUBSCRIPTION_ID_KEY } from './stripe-schemas.js';
import { lockLinkedSubscription } from './subscription-links.js';
import { invoiceWaitKey, linkWaitKey } from './subscriptions.js';
import { withBillingTables, type BillingDatabase } from './tables.js';

const GRANTING_BILLING_REASONS: ReadonlySet<string> = new Set(['subscription_create', 'subscription_cycle']);

export const invoicePaid =
  ({ notifications, wake }: HandlerContext): EventHandler =>
  async (transaction, event) => {
    const invoice = objectOf(stripeInvoice, event);
    const details = invoice.subscription_details;
    if (!details)
      return { status: 'ignored', reason: `invoice ${invoice.id} is not a subscription invoice (a one-off invoice): not started by POST /api/subscriptions` };
    const tx = withBillingTables(transaction);
    const subscription = await lockLinkedSubscription(tx, details.subscription, details.metadata?.[SUBSCRIPTION_ID_KEY]);
    if (!subscription) {
      // Every subscription of ours carries our id (subscription_data.metadata), which Stripe copies
      // to each of its invoices: an invoice whose copy names none, linked to nothing, is another
      // sale's. Only a payload without the copy at all (an API version that did not send it) cannot tell.
      if (details.metadata !== undefined) {
        return {
          status: 'ignored',
          reason: `invoice ${invoice.id} of Stripe subscription ${details.subscription}: no subscription of ours is linked to it and its subscription metadata names none: not started by POST /api/subscriptions`,
        };
      }
      throw new RetryLaterError(
        `invoice ${invoice.id} of Stripe subscription ${details.subscription} carries no subscription metadata and is not tied to a subscription of ours (yet)`,
        {
          waitsFor: [linkWaitKey(details.subscription)],
          ignoreWhenExhausted: true,
        },
      );
    }
    await linkPayments(tx, wake, invoice.id, invoice.payment_intents);

    if (!invoice.billing_reason || !GRANTING_BILLING_REASONS.has(invoice.billing_reason)) {
      return { status: 'ignored', reason: `billing_reason ${invoice.billing_reason ?? 'null'} does not grant credits` };
    }
    // The total, not amount_paid: a period paid from the customer's credit balance (a downgrade's
    // proration, a goodwill credit) is paid, though no money moved (amount_paid 0).
    if (invoice.total <= 0)
      return { status: 'ignored', reason: `invoice ${invoice.id} is for nothing (a trial, a 100 % discount): credits come with paid periods` };
    if (invoice.currency.toLowerCase() !== subscription.currency) {
      throw new PermanentError(
        `currency mismatch for subscription ${subscription.subscription_id}: invoice ${invoice.id} paid in ${invoice.currency}, the plan is in ${subscription.currency}`,
      );
    }

    const granted = await tx
      .insertInto('invoice_grants')
      .values({
        invoice_id: invoice.id,
        subscription_id: subscription.subscription_id,
        account_id: subscription.account_id,
        credits: subscription.credits,
        amount_paid: invoice.amount_paid,
        currency: subscription.currency,
        billing_reason: invoice.billing_reason,
        event_id: event.event_id,
      })
      .onConflict((oc) => oc.column('invoice_id').doNothing())
      .returning('event_id')
      .executeTakeFirst();
    if (granted) {
      await addGrants(tx, [{ accountId: subscription.account_id, credits: subscription.credits }]);
      // A dispute or a refund of this payment that overtook it waits for the grant (docs/events.md),
      // by its PaymentIntent. An invoice of today's API names none: invoice_payment.paid links them.
      // The invoice's key orders this read against a link being written (linkPayments takes it too):
      // a link committed first is read here, one committed after wakes its waiters itself.
      await lockWaitKeys(tx, [invoiceWaitKey(invoice.id)]);
      const linkedPayments = await tx.selectFrom('invoice_payments').select('payment_intent_id').where('invoice_id', '=', invoice.id).execute();
      const paidBy = new Set([...invoice.payment_intents, ...linkedPayments.map((row) => row.payment_intent_id)]);
      await wake(tx, [...[...paidBy].map(paymentWaitKey), invoiceWaitKey(invoice.id)]);
      const at = (seconds: number | null) => (seconds === null ? null : new Date(seconds * 1000).toISOString());
      await notifyAccounts(tx, notifications, [
        {
          type: 'subscription.period_paid',
          key: `subscription.period_paid:${invoice.id}`,
          accountId: subscription.account_id,
          creditsDelta: subscription.credits,
          eventId: event.event_id,
          data: {
            subscription_id: subscription.subscription_id,
            invoice_id: invoice.id,
            period_start: at(invoice.period.start),
            period_end: at(invoice.period.end),
            credits: subscription.credits,
          },
        },
      ]);
      return { status: 'processed' };
    }
    const { event_id: by } = await tx.selectFrom('invoice_grants').select('event_id').where('invoice_id', '=', invoice.id).executeTakeFirstOrThrow();
    // Re-running the event that granted (a replay) is the same outcome, not a duplicate.
    return by === event.event_id ? { status: 'processed' } : { status: 'duplicate', duplicateOf: by };
  };

/** invoice_payment.paid: which PaymentIntent paid which invoice, so its refunds find the grant. */
export const invoicePaymentPaid =
  (wake: Wake): EventHandler =>
  async (transaction, event) => {
    const payment = objectOf(stripeInvoicePayment, event);
    if (!payment.payment.payment_intent) return { status: 'ignored', reason: `invoice ${payment.invoice} was paid without a PaymentIntent` };
    await linkPayments(withBillingTables(transaction), wake, payment.invoice, [payment.payment.payment_intent]);
    return { status: 'processed' };
  };

/**
 * Records which PaymentIntents paid the invoice. A refund or dispute of one of them that arrived
 * first, when the invoice's grant is already there, waits for no more than this link: woken.
 */
async function linkPayments(tx: Transaction<BillingDatabase>, wake: Wake, invoiceId: string, paymentIntents: readonly string[]): Promise<void> {
  if (paymentIntents.length === 0) return;
  // In turn with the invoice's grant, which reads the links to wake their waiters (above).
  await lockWaitKeys(tx, [invoiceWaitKey(invoiceId)]);
  const linked = await tx
    .insertInto('invoice_payments')
    .values(paymentIntents.map((payment_intent_id) => ({ payment_intent_id, invoice_id: invoiceId })))
    .onConflict((oc) => oc.column('payment_intent_id').doNothing())
    .returning('payment_intent_id')
    .execute();
  if (linked.length > 0)
    await wake(
      tx,
      linked.map((row) => paymentWaitKey(row.payment_intent_id)),
    );
}
