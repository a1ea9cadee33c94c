// charge.dispute.* for a package's payment: the order is the one its PaymentIntent paid. The
// ledger's disputeHandler records each event with Stripe's status, and while the dispute's funds
// are withdrawn and not reinstated, DISPUTE_POLICY=revoke takes the order's unused credits back on
// the same target as its refunds (credit-revocations.ts); a reinstatement gives back what was
// taken beyond what the refunds call for. The app hears order.disputed and
// order.dispute_reinstated, once each, whatever the arrival order (docs/notifications.md). A
// dispute of a PaymentIntent no order names is another sale's, 'ignored' at once (docs/events.md).
import type { Notifications } from '../../business-module.js';
import { disputeHandler, type DisputePolicy, type RefundPolicy } from '../ledger/index.js';
import { orderRevocation, storeRevocation } from './credit-revocations.js';
import { withCreditTables } from './tables.js';

export function chargeDisputed(policies: { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy }, notifications: Notifications) {
  return disputeHandler(policies, notifications, 'order', async (transaction, paymentIntent) => {
    const tx = withCreditTables(transaction);
    const order = await tx.selectFrom('orders').selectAll().where('payment_intent_id', '=', paymentIntent).forUpdate().executeTakeFirst();
    if (!order) return undefined;
    return {
      key: `order:${order.order_id}`,
      accountId: order.account_id,
      amount: order.amount,
      credits: order.credits,
      refundedAmount: order.refunded_amount,
      revocation: await orderRevocation(tx, order.order_id),
      storeRevocation: (revocation) => storeRevocation(tx, order, revocation),
      notify: { disputed: 'order.disputed', reinstated: 'order.dispute_reinstated', data: { order_id: order.order_id } },
    };
  });
}
