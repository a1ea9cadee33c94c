// Refunding a paid order through Stripe, as ops asks (POST /admin/api/orders/:id/refund). The
// order's own state does not change here: credits are taken back when Stripe's charge.refunded
// event arrives, the one source of truth for refunds whoever started them (this API, the
// Dashboard). A dispute is not a refund (Stripe sends no charge.refunded for it): it has its own
// path, charge-disputed.ts.
//
// A refund request is planned once, when the caller's Idempotency-Key is first seen: its number
// among the order's refunds and its amount. The outbound key `refund:<order_id>:<n>` follows from
// them, so a retried request sends Stripe the same request with the same key and never refunds
// twice, while a second partial refund (a new key) gets n + 1 and is not mistaken for a retry.
//
// What a refund asks is held back (refund_requests) before Stripe is called, and a refund that
// does not fit in what is left is refused: charge.refunded arrives only after Stripe has refunded,
// so two refunds asked at once would each see the whole order refundable and both reach Stripe.
// The order's row lock serialises that check for one short transaction, never across the call to
// Stripe. A failed call releases what its refund held; a retry with the same key holds
// it again if it still fits.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { StripeCallFailure, StripeCalls } from '../../business-module.js';
import { refundKey } from './idempotency-keys.js';
import { findOrder } from './orders.js';
import type { CreditsDatabase, OrderRow } from './tables.js';

export interface PlannedRefund {
  orderId: string;
  seq: number;
  amount: number;
}

export type RefundPlan =
  | { outcome: 'planned'; refund: PlannedRefund; paymentIntent: string }
  | { outcome: 'order_not_found' }
  | { outcome: 'not_paid' }
  | { outcome: 'amount_out_of_range'; orderAmount: number; currency: string }
  | { outcome: 'exceeds_refundable'; wanted: number; left: number; orderAmount: number; currency: string };

/**
 * Checks that the order can be refunded by `amount` (all that is left when undefined), numbers
 * the refund after those already planned for the order, which `earlierRefunds` counts, and holds
 * its amount back. Runs in the transaction that registers the caller's key.
 */
export async function planRefund(
  tx: Transaction<CreditsDatabase>,
  orderId: string,
  amount: number | undefined,
  earlierRefunds: () => Promise<number>,
): Promise<RefundPlan> {
  return holdBack(tx, orderId, amount, async () => (await earlierRefunds()) + 1);
}

export type RefundOutcome =
  { outcome: 'created'; refundId: string; amount: number; status: string | null } | StripeCallFailure | Exclude<RefundPlan, { outcome: 'planned' }>;

/** Asks Stripe for a planned refund, outside any transaction, and records its answer. */
export async function createRefund(deps: { db: Kysely<CreditsDatabase>; stripeCalls: StripeCalls }, refund: PlannedRefund): Promise<RefundOutcome> {
  const held = await deps.db.transaction().execute((tx) => holdAgain(tx, refund));
  if (held.outcome !== 'planned') return held;
  const call = await deps.stripeCalls.attempt('refund_create', (stripe) =>
    stripe.refunds.create(
      { payment_intent: held.paymentIntent, amount: refund.amount, metadata: { order_id: refund.orderId } },
      { idempotencyKey: refundKey(refund.orderId, refund.seq) },
    ),
  );
  const request = deps.db.updateTable('refund_requests').where('order_id', '=', refund.orderId).where('seq', '=', refund.seq);
  if (call.outcome !== 'done') {
    // Never over a success: a retry with the same key, running past this one's lease, may have got the refund.
    await request
      .set({ status: 'failed', updated_at: sql`now()` })
      .where('status', '=', 'requested')
      .execute();
    return call;
  }
  await request.set({ status: 'succeeded', stripe_refund_id: call.value.id, updated_at: sql`now()` }).execute();
  return { outcome: 'created', refundId: call.value.id, amount: call.value.amount, status: call.value.status };
}

/**
 * Locks the order, then holds `amount` of it (all that is left when undefined) back for the
 * refund numbered `seq()`, if it fits. Numbering and summing under the lock serialises an order's
 * refunds across processes: a count or a sum taken before it could miss a refund committing
 * meanwhile.
 */
async function holdBack(tx: Transaction<CreditsDatabase>, orderId: string, amount: number | undefined, seq: () => Promise<number>): Promise<RefundPlan> {
  const order = await findOrder(tx, orderId, { forUpdate: true });
  if (!order) return { outcome: 'order_not_found' };
  if (order.status === 'pending' || order.payment_intent_id === null) return { outcome: 'not_paid' };
  const money = { orderAmount: order.amount, currency: order.currency };
  if (amount !== undefined && amount > order.amount) return { outcome: 'amount_out_of_range', ...money };
  const n = await seq();
  const left = order.amount - (await refundedOrHeld(tx, order, n));
  const wanted = amount ?? left;
  if (wanted <= 0 || wanted > left) return { outcome: 'exceeds_refundable', wanted, left, ...money };
  await tx
    .insertInto('refund_requests')
    .values({ order_id: orderId, seq: n, amount: wanted })
    // A retry whose earlier call failed: the same refund, held again.
    .onConflict((oc) => oc.columns(['order_id', 'seq']).doUpdateSet({ status: 'requested', updated_at: sql`now()` }))
    .execute();
  return { outcome: 'planned', refund: { orderId, seq: n, amount: wanted }, paymentIntent: order.payment_intent_id };
}

/**
 * Before a planned refund calls Stripe (again). One whose last call failed, or that the release
 * before refund_requests planned, is held back again if it still fits. One still held (its first
 * request is calling Stripe now, or died doing so) or done asks again as it is: Stripe answers the
 * same key with the same refund.
 */
async function holdAgain(tx: Transaction<CreditsDatabase>, refund: PlannedRefund): Promise<RefundPlan> {
  const { orderId, seq, amount } = refund;
  const request = await tx.selectFrom('refund_requests').select('status').where('order_id', '=', orderId).where('seq', '=', seq).executeTakeFirst();
  if (!request || request.status === 'failed') return holdBack(tx, orderId, amount, () => Promise.resolve(seq));
  const paymentIntent = (await findOrder(tx, orderId))?.payment_intent_id;
  if (!paymentIntent) throw new Error(`refund ${seq} of order ${orderId} lost its order`);
  return { outcome: 'planned', refund, paymentIntent };
}

/**
 * What of the order is refunded, or held back by its refunds other than `seq`. Stripe's
 * cumulative amount_refunded (orders.refunded_amount, from charge.refunded) counts the
 * Dashboard's refunds and ours once their event has arrived; the refunds Stripe has accepted from
 * us count ours before that. Their sum would count a reported refund of ours twice, so the larger
 * of the two, plus what is being asked now. That falls short only while Stripe's report lags
 * behind both a refund from elsewhere and one of ours; Stripe refuses what then exceeds the charge.
 */
async function refundedOrHeld(tx: Transaction<CreditsDatabase>, order: OrderRow, seq: number): Promise<number> {
  const { rows } = await sql<{ requested: number; succeeded: number }>`
    select coalesce(sum(amount) filter (where status = 'requested'), 0)::int as requested,
           coalesce(sum(amount) filter (where status = 'succeeded'), 0)::int as succeeded
    from refund_requests
    where order_id = ${order.order_id} and seq <> ${seq}`.execute(tx);
  const { requested, succeeded } = rows[0]!;
  return Math.max(order.refunded_amount, succeeded) + requested;
}
