// charge.dispute.* for a subscription's payment: the period is the invoice grant its PaymentIntent
// paid (invoice_payment.paid's link). As for a package's order (credits' charge-disputed.ts), each
// event is applied by the ledger's settleDispute, on the same revocation target as the period's
// refunds (invoice_grants.revocation_target), so neither takes what the other took. The app hears
// subscription.period_disputed and subscription.period_dispute_reinstated, once each. A
// PaymentIntent no granted invoice names is another sale's (a dispute follows its payment by
// days): the dispute ends 'ignored' at once.
import { objectOf, RetryLaterError, stripeDispute, type EventHandler, type Notifications } from '../../business-module.js';
import { settleDispute, unfinishedPaymentEvent, type DisputePolicy, type RefundPolicy } from '../ledger/index.js';
import { lockGrantOfPayment } from './invoice-refunds.js';
import { withBillingTables } from './tables.js';

export function invoiceChargeDisputed(policies: { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy }, notifications: Notifications): EventHandler {
  return async (transaction, event) => {
    const tx = withBillingTables(transaction);
    const dispute = objectOf(stripeDispute, event);
    const paymentIntent = dispute.payment_intent;
    if (paymentIntent === null) return { status: 'ignored', reason: `dispute ${dispute.id}: charge ${dispute.charge} has no PaymentIntent, so pays no invoice of ours` };
    const grant = await lockGrantOfPayment(tx, paymentIntent);
    if (!grant) {
      const unlinked = `dispute ${dispute.id}: no granted invoice paid by payment intent ${paymentIntent}`;
      const awaited = await unfinishedPaymentEvent(transaction, paymentIntent);
      if (awaited !== undefined) throw new RetryLaterError(`${unlinked} (yet): waiting for ${awaited}, its payment's event`, { ignoreWhenExhausted: true });
      return { status: 'ignored', reason: unlinked };
    }
    await settleDispute(transaction, notifications, policies, {
      dispute: { ...dispute, payment_intent: paymentIntent },
      event,
      purchase: {
        key: `invoice:${grant.invoice_id}`,
        accountId: grant.account_id,
        amount: grant.amount_paid,
        credits: grant.credits,
        refundedAmount: grant.refunded_amount,
        revocation: { target: grant.revocation_target, revoked: grant.revoked_credits },
        storeRevocation: async ({ target, revoked }) => {
          await tx.updateTable('invoice_grants').set({ revocation_target: target, revoked_credits: revoked }).where('invoice_id', '=', grant.invoice_id).execute();
        },
        notify: {
          disputed: 'subscription.period_disputed',
          reinstated: 'subscription.period_dispute_reinstated',
          data: { subscription_id: grant.subscription_id, invoice_id: grant.invoice_id },
        },
      },
    });
    return { status: 'processed' };
  };
}
