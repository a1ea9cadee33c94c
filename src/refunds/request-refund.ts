// POST /admin/api/orders/:id/refund: ops refunds a paid order through Stripe. Our own state does
// not change here: credits are taken back when Stripe's charge.refunded event arrives, the one
// source of truth for refunds whoever started them (this API, the Dashboard, a dispute).
//
// The caller's Idempotency-Key is required and fixes the refund's sequence number and amount
// when first seen; the outbound key `refund:<order_id>:<n>` follows from them. A retried request
// (same key) sends Stripe the same request with the same key, so it never refunds twice; a second
// partial refund (a new key) gets n + 1 and is not mistaken for a replay of the first.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { findOrder } from '../fulfilment/orders.js';
import { runIdempotent, STRIPE_BUSY, type HttpResult } from '../http/idempotent-request.js';
import { refundKey } from '../stripe/idempotency-keys.js';
import { describeStripeFailure, StripeBusy, type StripeCalls } from '../stripe/outbound.js';

export interface RefundDeps {
  db: Kysely<Database>;
  stripeCalls: StripeCalls;
  /** How long an inbound Idempotency-Key is leased to the request using it. */
  idempotencyLeaseMs: number;
}

export function requestRefund(deps: RefundDeps, orderId: string, input: { amount?: number | undefined }, idempotencyKey: string): Promise<HttpResult> {
  return runIdempotent(deps.db, {
    key: idempotencyKey,
    operation: 'refund',
    request: [orderId, input.amount ?? null],
    leaseMs: deps.idempotencyLeaseMs,
    async register(tx) {
      // Locked: concurrent refund requests for one order take sequence numbers in turn.
      const order = await findOrder(tx, orderId, { forUpdate: true });
      if (!order) return { status: 404, body: { error: 'order not found' } };
      if (order.status === 'pending' || order.payment_intent_id === null) {
        return { status: 409, body: { error: 'order is not paid: there is nothing to refund' } };
      }
      const left = order.amount - order.refunded_amount;
      const amount = input.amount ?? left;
      if (amount <= 0 || amount > left) {
        return { status: 400, body: { error: `amount must be between 1 and ${left} (what is left of ${order.amount} ${order.currency})` } };
      }
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from api_idempotency_keys where order_id = ${orderId} and operation = 'refund'`.execute(tx);
      return { orderId, refund: { seq: rows[0]!.n + 1, amount } };
    },
    async execute({ orderId: id, refund }) {
      const order = await findOrder(deps.db, id);
      const paymentIntent = order?.payment_intent_id;
      if (!paymentIntent || !refund) throw new Error(`refund key for order ${id} lost its order or sequence`);
      try {
        const created = await deps.stripeCalls.run('refund_create', (stripe) =>
          stripe.refunds.create(
            { payment_intent: paymentIntent, amount: refund.amount, metadata: { order_id: id } },
            { idempotencyKey: refundKey(id, refund.seq) },
          ),
        );
        return { status: 201, body: { order_id: id, refund_id: created.id, amount: created.amount, status: created.status } };
      } catch (error) {
        if (error instanceof StripeBusy) return { ...STRIPE_BUSY, body: { ...STRIPE_BUSY.body, order_id: id } };
        return { status: 502, body: { error: `Stripe could not create the refund (${describeStripeFailure(error)}); retry with the same Idempotency-Key`, order_id: id } };
      }
    },
  });
}
