// charge.dispute.* for a package's payment: the order is the one its PaymentIntent paid. The
// ledger's disputeHandler records each event with Stripe's status, and while the dispute's funds
// are withdrawn and not reinstated, DISPUTE_POLICY=revoke takes the order's unused credits back on
// the same target as its refunds (credit-revocations.ts); a reinstatement gives back what was
// taken beyond what the refunds call for. The app hears order.disputed and
// order.dispute_reinstated, once each, whatever the arrival order (docs/notifications.md). A
// dispute of a PaymentIntent no order names waits for that payment while an order of ours is still
// being paid (its Checkout Session opened in the last WAIT_HOURS), and is another sale's, 'ignored'
// at once, when none is (docs/events.md).
import { sql } from 'kysely';
import { WAIT_HOURS, type Database, type Notifications } from '../../business-module.js';
import type { Transaction } from 'kysely';
import { disputeHandler, type DisputedPurchase, type DisputePolicy, type RefundPolicy } from '../ledger/index.js';
import { orderPurchase, orderRevocation, storeRevocation } from './credit-revocations.js';
import { withCreditTables } from './tables.js';

export function chargeDisputed(policies: { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy }, notifications: Notifications) {
  return disputeHandler(policies, notifications, 'order', { lockPurchase, mayStillPay });
}

/** The order its PaymentIntent paid, locked. */
async function lockPurchase(transaction: Transaction<Database>, paymentIntent: string): Promise<DisputedPurchase | undefined> {
  const tx = withCreditTables(transaction);
  const order = await tx.selectFrom('orders').selectAll().where('payment_intent_id', '=', paymentIntent).forUpdate().executeTakeFirst();
  if (!order) return undefined;
  return {
    key: orderPurchase(order.order_id),
    accountId: order.account_id,
    amount: order.amount,
    credits: order.credits,
    refundedAmount: order.refunded_amount,
    revocation: await orderRevocation(tx, order.order_id),
    storeRevocation: (revocation) => storeRevocation(tx, order, revocation),
    notify: { disputed: 'order.disputed', reinstated: 'order.dispute_reinstated', data: { order_id: order.order_id } },
  };
}

/** An order whose Checkout Session is open: its payment's event may still be on its way. */
async function mayStillPay(transaction: Transaction<Database>): Promise<boolean> {
  const open = await withCreditTables(transaction)
    .selectFrom('orders')
    .select('order_id')
    .where('status', '=', 'pending')
    .where('checkout_session_id', 'is not', null)
    .where('created_at', '>', sql<Date>`now() - make_interval(hours => ${WAIT_HOURS})`)
    .limit(1)
    .executeTakeFirst();
  return open !== undefined;
}
