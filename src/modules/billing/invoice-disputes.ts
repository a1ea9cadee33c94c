// charge.dispute.* for a subscription's payment: the period is the invoice grant its PaymentIntent
// paid (invoice_payment.paid's link). As for a package's order (credits' charge-disputed.ts), the
// ledger's disputeHandler applies each event, on the same revocation target as the period's
// refunds (invoice_grants.revocation_target), so neither takes what the other took. The app hears
// subscription.period_disputed and subscription.period_dispute_reinstated, once each. A dispute
// of a PaymentIntent no granted invoice names is another sale's, 'ignored' at once.
import type { Notifications } from '../../business-module.js';
import { disputeHandler, type DisputePolicy, type RefundPolicy } from '../ledger/index.js';
import { lockGrantOfPayment } from './invoice-refunds.js';
import { withBillingTables } from './tables.js';

export function invoiceChargeDisputed(policies: { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy }, notifications: Notifications) {
  return disputeHandler(policies, notifications, 'granted invoice', async (transaction, paymentIntent) => {
    const tx = withBillingTables(transaction);
    const grant = await lockGrantOfPayment(tx, paymentIntent);
    if (!grant) return undefined;
    return {
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
    };
  });
}
