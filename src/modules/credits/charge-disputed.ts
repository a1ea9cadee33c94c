// charge.dispute.* for a package's payment: the order is the one its PaymentIntent paid. Each
// event is applied by the ledger's settleDispute: the dispute recorded with Stripe's status, and
// while its funds are withdrawn and not reinstated, DISPUTE_POLICY=revoke takes the order's unused
// credits back on the same target as its refunds (credit-revocations.ts); a reinstatement gives
// back what was taken beyond what the refunds call for. The app hears order.disputed and
// order.dispute_reinstated, once each, whatever the arrival order (docs/notifications.md).
//
// A dispute carries only its charge's ids. It follows its payment by days (the cardholder's bank
// files it), by when the payment's checkout.session.completed has linked the PaymentIntent to its
// order; so a PaymentIntent no order names is another sale's, and the dispute ends 'ignored' at
// once (docs/events.md, "Ours or not").
import { objectOf, RetryLaterError, stripeDispute, type EventHandler, type Notifications } from '../../business-module.js';
import { settleDispute, unfinishedPaymentEvent, type DisputePolicy, type RefundPolicy } from '../ledger/index.js';
import { orderRevocation, storeRevocation } from './credit-revocations.js';
import { withCreditTables } from './tables.js';

export function chargeDisputed(policies: { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy }, notifications: Notifications): EventHandler {
  return async (transaction, event) => {
    const tx = withCreditTables(transaction);
    const dispute = objectOf(stripeDispute, event);
    const paymentIntent = dispute.payment_intent;
    if (paymentIntent === null) return { status: 'ignored', reason: `dispute ${dispute.id}: charge ${dispute.charge} has no PaymentIntent, so is no payment of ours` };
    const order = await tx.selectFrom('orders').selectAll().where('payment_intent_id', '=', paymentIntent).forUpdate().executeTakeFirst();
    if (!order) {
      const unlinked = `dispute ${dispute.id}: no paid order for payment intent ${paymentIntent}`;
      const awaited = await unfinishedPaymentEvent(transaction, paymentIntent);
      if (awaited !== undefined) throw new RetryLaterError(`${unlinked} (yet): waiting for ${awaited}, its payment's event`, { ignoreWhenExhausted: true });
      return { status: 'ignored', reason: unlinked };
    }
    await settleDispute(transaction, notifications, policies, {
      dispute: { ...dispute, payment_intent: paymentIntent },
      event,
      purchase: {
        key: `order:${order.order_id}`,
        accountId: order.account_id,
        amount: order.amount,
        credits: order.credits,
        refundedAmount: order.refunded_amount,
        revocation: await orderRevocation(tx, order.order_id),
        storeRevocation: (revocation) => storeRevocation(tx, order, revocation),
        notify: { disputed: 'order.disputed', reinstated: 'order.dispute_reinstated', data: { order_id: order.order_id } },
      },
    });
    return { status: 'processed' };
  };
}
