// Refunding a paid order through Stripe, as ops asks (POST /admin/api/orders/:id/refund). Our own
// state does not change here: credits are taken back when Stripe's charge.refunded event arrives,
// the one source of truth for refunds whoever started them (this API, the Dashboard). A dispute
// is not a refund (Stripe sends no charge.refunded for it): it has its own path,
// charge-disputed.ts.
//
// A refund request is planned once, when the caller's Idempotency-Key is first seen: its number
// among the order's refunds and its amount. The outbound key `refund:<order_id>:<n>` follows from
// them, so a retried request sends Stripe the same request with the same key and never refunds
// twice, while a second partial refund (a new key) gets n + 1 and is not mistaken for a retry.
import type { Kysely, Transaction } from 'kysely';
import type { StripeCallFailure, StripeCalls } from '../../business-module.js';
import { refundKey } from './idempotency-keys.js';
import { findOrder } from './orders.js';
import type { CreditsDatabase } from './tables.js';

export interface PlannedRefund {
  orderId: string;
  seq: number;
  amount: number;
}

export type RefundPlan =
  | { outcome: 'planned'; refund: PlannedRefund }
  | { outcome: 'order_not_found' }
  | { outcome: 'not_paid' }
  | { outcome: 'amount_out_of_range'; left: number; orderAmount: number; currency: string };

/**
 * Checks that the order can be refunded by `amount` (all that is left when undefined) and numbers
 * the refund after those already planned for the order, which `earlierRefunds` counts. Locks the
 * order first and counts under the lock, so concurrent requests for one order take numbers in
 * turn: a count taken before the lock saw the same number as a request committing meanwhile.
 */
export async function planRefund(
  tx: Transaction<CreditsDatabase>,
  orderId: string,
  amount: number | undefined,
  earlierRefunds: () => Promise<number>,
): Promise<RefundPlan> {
  const order = await findOrder(tx, orderId, { forUpdate: true });
  if (!order) return { outcome: 'order_not_found' };
  if (order.status === 'pending' || order.payment_intent_id === null) return { outcome: 'not_paid' };
  const left = order.amount - order.refunded_amount;
  const wanted = amount ?? left;
  if (wanted <= 0 || wanted > left) return { outcome: 'amount_out_of_range', left, orderAmount: order.amount, currency: order.currency };
  return { outcome: 'planned', refund: { orderId, seq: (await earlierRefunds()) + 1, amount: wanted } };
}

export type RefundOutcome = { outcome: 'created'; refundId: string; amount: number; status: string | null } | StripeCallFailure;

export async function createRefund(deps: { db: Kysely<CreditsDatabase>; stripeCalls: StripeCalls }, refund: PlannedRefund): Promise<RefundOutcome> {
  const { orderId } = refund;
  const paymentIntent = (await findOrder(deps.db, orderId))?.payment_intent_id;
  if (!paymentIntent) throw new Error(`refund ${refund.seq} of order ${orderId} lost its order`);
  const call = await deps.stripeCalls.attempt('refund_create', (stripe) =>
    stripe.refunds.create({ payment_intent: paymentIntent, amount: refund.amount, metadata: { order_id: orderId } }, { idempotencyKey: refundKey(orderId, refund.seq) }),
  );
  if (call.outcome !== 'done') return call;
  return { outcome: 'created', refundId: call.value.id, amount: call.value.amount, status: call.value.status };
}
