// charge.refunded: Stripe sends the charge with its cumulative amount_refunded, once per refund
// (so it legitimately repeats for one charge and is never collapsed). The order keeps the
// largest amount Stripe has reported: repeated, reordered or stale events (a retry carrying an
// old charge) can only confirm it, never lower it. Credits are taken back per REFUND_POLICY,
// converging on one target per order, so a refund never revokes twice. Each growth of the amount
// refunded is told to the app once, as order.refunded with what it took back (docs/notifications.md).
import { objectOf, PermanentError, refundedCharge, RetryLaterError, type EventHandler, type Notifications } from '../../business-module.js';
import { notifyAccounts, revocationTarget, type RefundPolicy } from '../ledger/index.js';
import { revokeCredits } from './credit-revocations.js';
import { withCreditTables } from './tables.js';

export function chargeRefunded(policy: RefundPolicy, notifications: Notifications): EventHandler {
  return async (transaction, event) => {
    const tx = withCreditTables(transaction);
    const charge = objectOf(refundedCharge, event);
    if (!charge.payment_intent) return { status: 'ignored', reason: `charge ${charge.id} has no PaymentIntent: not a payment of ours` };

    const orders = await tx.selectFrom('orders').selectAll().where('payment_intent_id', '=', charge.payment_intent).forUpdate().execute();
    // The refund can arrive before the payment it refunds was fulfilled: wait for it. A refund of
    // a payment that is not a package's (a subscription's) never finds one: 'ignored' in the end.
    if (orders.length === 0) throw new RetryLaterError(`no paid order for payment intent ${charge.payment_intent} (yet)`, { ignoreWhenExhausted: true });
    if (orders.length > 1) throw new PermanentError(`payment intent ${charge.payment_intent} names ${orders.length} orders`);
    const order = orders[0]!;

    const refunded = Math.min(order.amount, Math.max(order.refunded_amount, charge.amount_refunded));
    if (refunded !== order.refunded_amount) {
      await tx
        .updateTable('orders')
        .set({ refunded_amount: refunded, ...(refunded >= order.amount && { status: 'refunded' }) })
        .where('order_id', '=', order.order_id)
        .execute();
    }
    const revoked = await revokeCredits(tx, order, revocationTarget(policy, order, refunded));
    if (refunded > order.refunded_amount) {
      await notifyAccounts(transaction, notifications, [
        {
          type: 'order.refunded',
          // The amount refunded only grows: one notification per amount the order reached.
          key: `order.refunded:${order.order_id}:${refunded}`,
          accountId: order.account_id,
          creditsDelta: -revoked,
          eventId: event.event_id,
          data: { order_id: order.order_id, refund_id: charge.refunds?.data[0]?.id ?? null, credits_revoked: revoked, amount_refunded: refunded },
        },
      ]);
    }
    return { status: 'processed' };
  };
}
