// charge.refunded: Stripe sends the charge with its cumulative amount_refunded, once per refund
// (so it legitimately repeats for one charge and is never collapsed). The order keeps the
// largest amount Stripe has reported: repeated, reordered or stale events (a retry carrying an
// old charge) can only confirm it, never lower it. Credits are taken back per REFUND_POLICY,
// converging on one target per order, so a refund never revokes twice, nor takes what a lost
// dispute already took (charge-disputed.ts). Each growth of the amount refunded is told to the
// app once, as order.refunded with what it took back (docs/notifications.md).
// A charge no order is linked to is judged by what it carries (the ledger's chargeOwnership):
// another sale's ends 'ignored' at once; one whose metadata names an order of ours waits for that
// order's payment, or is refused when the order is unknown or was paid by another PaymentIntent.
import type { Transaction } from 'kysely';
import {
  lockWaitKeys,
  objectOf,
  PermanentError,
  quoted,
  refundedCharge,
  RetryLaterError,
  type EventHandler,
  type FinishOutcome,
  type Notifications,
  type RefundedCharge,
} from '../../business-module.js';
import { chargeOwnership, notifyAccounts, paymentWaitKey, revocationTarget, type RefundPolicy } from '../ledger/index.js';
import { revokeCredits } from './credit-revocations.js';
import { findOrder } from './orders.js';
import { withCreditTables, type CreditsDatabase } from './tables.js';

export function chargeRefunded(policy: RefundPolicy, notifications: Notifications): EventHandler {
  return async (transaction, event) => {
    const tx = withCreditTables(transaction);
    const charge = objectOf(refundedCharge, event);
    const paidBy = (paymentIntent: string) => tx.selectFrom('orders').selectAll().where('payment_intent_id', '=', paymentIntent).forUpdate().execute();
    let orders = charge.payment_intent === null ? [] : await paidBy(charge.payment_intent);
    if (orders.length === 0 && charge.payment_intent !== null) {
      // Before the look that may decide to wait: the payment's wake cannot slip in between.
      await lockWaitKeys(transaction, [paymentWaitKey(charge.payment_intent)]);
      orders = await paidBy(charge.payment_intent);
    }
    if (orders.length > 1) throw new PermanentError(`payment intent ${charge.payment_intent} names ${orders.length} orders`);
    const order = orders[0];
    if (!order) return unlinkedCharge(tx, charge);

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

/** A charge that no order's PaymentIntent names: not ours, or ours and early (wait), or a wrong claim (refused). */
async function unlinkedCharge(tx: Transaction<CreditsDatabase>, charge: RefundedCharge): Promise<FinishOutcome> {
  const whose = chargeOwnership(charge);
  const unpaid = charge.payment_intent === null ? `charge ${charge.id}` : `no paid order for payment intent ${charge.payment_intent}`;
  // Every package payment carries its order's id (checkout.ts), so a charge that may be an
  // invoice's is not a package's: the billing module waits for it, if it runs.
  if (whose.verdict !== 'ours') return { status: 'ignored', reason: `${unpaid}: ${whose.reason}` };
  if (whose.orderId === undefined) return { status: 'ignored', reason: `${whose.reason}: a subscription's payment, not a package's` };
  const named = await findOrder(tx, whose.orderId);
  if (!named) throw new PermanentError(`unknown order ${quoted(whose.orderId)} in the metadata of charge ${charge.id}`);
  if (named.payment_intent_id !== null || charge.payment_intent === null) {
    throw new PermanentError(
      `charge ${charge.id} of payment intent ${charge.payment_intent ?? '(none)'} names order ${named.order_id} in its metadata, but ${named.order_id} was paid by ${named.payment_intent_id ?? 'no payment intent yet'}: refused`,
    );
  }
  // The refund overtook its payment's checkout.session.completed, which stores the PaymentIntent.
  throw new RetryLaterError(
    `${whose.reason}, but ${named.order_id} is not paid by payment intent ${charge.payment_intent} (yet): waiting for its checkout.session.completed`,
    {
      waitsFor: [paymentWaitKey(charge.payment_intent)],
    },
  );
}
