// Refunds take credits back once, never below what was used, whatever order and however often
// Stripe delivers charge.refunded; a refund that arrives before its payment waits for it; an
// event of the wrong mode never acts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OrderRow } from '../../../src/modules/credits/tables.js';
import { consumeCredits } from '../../../src/modules/ledger/runs.js';
import { refundedCharge, sampleEvent } from '../../../src/stripe/sample-events.js';
import { createTestDatabase } from '../../support/database.js';
import { finishedEvent, givenOrder, orderRow, paidEvent, paidOrder, quotaOf, waitingEvent } from '../../support/factories.js';
import { serviceForFile, startTestService } from '../../support/service.js';

const file = serviceForFile();

function refundEvent(order: OrderRow & { payment_intent_id: string }, amountRefunded: number, created?: number) {
  const charge = refundedCharge({
    paymentIntentId: order.payment_intent_id,
    amount: order.amount,
    currency: order.currency,
    amountRefunded,
    orderId: order.order_id,
  });
  return sampleEvent('charge.refunded', charge, created === undefined ? {} : { created });
}

async function deliverAndFinish(event: ReturnType<typeof refundEvent>) {
  assert.equal((await file.service.deliver(event)).status, 200);
  return finishedEvent(file.database, event.id);
}

describe('charge.refunded', () => {
  test('a full refund takes the unused credits back once and marks the order refunded', async () => {
    const order = await paidOrder(file.database, file.service);
    const full = refundEvent(order, order.amount);
    assert.equal((await deliverAndFinish(full)).status, 'processed');
    // The same refund again (a retry under a new id, a resend): nothing more is taken.
    assert.equal((await deliverAndFinish(refundEvent(order, order.amount))).status, 'processed');
    assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 0, used: 0, remaining: 0 });
    const refunded = await orderRow(file.database, order.order_id);
    assert.deepEqual({ status: refunded.status, refunded_amount: refunded.refunded_amount }, { status: 'refunded', refunded_amount: order.amount });
  });

  test('credits already used are not clawed back: quota never goes below zero', async () => {
    const order = await paidOrder(file.database, file.service);
    for (let i = 0; i < 10; i++) assert.ok(await consumeCredits(file.database.db, order.account_id, 1));
    await deliverAndFinish(refundEvent(order, order.amount));
    assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 10, used: 10, remaining: 0 });
  });

  test('a partial refund is recorded and revokes nothing; the refund that completes it revokes all', async () => {
    const order = await paidOrder(file.database, file.service);
    await deliverAndFinish(refundEvent(order, 1000));
    let row = await orderRow(file.database, order.order_id);
    assert.deepEqual({ status: row.status, refunded_amount: row.refunded_amount }, { status: 'paid', refunded_amount: 1000 });
    assert.equal((await quotaOf(file.database, order.account_id)).remaining, 40);

    await deliverAndFinish(refundEvent(order, order.amount));
    // A stale event (an older charge carrying the first partial amount) arriving last changes nothing.
    await deliverAndFinish(refundEvent(order, 1000, Math.floor(Date.now() / 1000) - 3600));
    row = await orderRow(file.database, order.order_id);
    assert.deepEqual({ status: row.status, refunded_amount: row.refunded_amount }, { status: 'refunded', refunded_amount: order.amount });
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
  });

  test('a refund delivered before its payment waits for it, spending no attempt, and is applied as soon as the payment is', async () => {
    const order = await givenOrder(file.database);
    const payment = paidEvent(order);
    const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
    const refund = refundEvent({ ...order, payment_intent_id: paymentIntentId }, order.amount);
    assert.equal((await file.service.deliver(refund)).status, 200);
    const waiting = await waitingEvent(file.database, refund.id);
    assert.deepEqual([waiting.attempts, waiting.waits_for], [0, [`payment_intent:${paymentIntentId}`]], 'not dropped, not failed, not counted');
    assert.match(waiting.last_error ?? '', /names order .* in its metadata, but .* is not paid by payment intent .* \(yet\)/);

    assert.equal((await file.service.deliver(payment)).status, 200);
    // Woken by the payment's commit: no retry backoff to wait out (the default deadline is enough).
    assert.equal((await finishedEvent(file.database, refund.id)).status, 'processed');
    assert.equal((await orderRow(file.database, order.order_id)).status, 'refunded');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
  });
});

test('REFUND_POLICY=proportional takes back credits in proportion to the amount refunded', async () => {
  const other = await createTestDatabase();
  const proportional = await startTestService(other, { env: { REFUND_POLICY: 'proportional' } });
  try {
    const order = await givenOrder(other);
    const payment = paidEvent(order);
    await proportional.deliver(payment);
    await finishedEvent(other, payment.id);
    const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
    const half = refundEvent({ ...order, payment_intent_id: paymentIntentId }, order.amount / 2);
    await proportional.deliver(half);
    assert.equal((await finishedEvent(other, half.id)).status, 'processed');
    assert.deepEqual(await quotaOf(other, order.account_id), { account_id: order.account_id, granted: 20, used: 0, remaining: 20 });
  } finally {
    await proportional.close();
    await other.close();
  }
});

test('a live-mode event reaching a test-mode service fails visibly and grants nothing', async () => {
  const order = await givenOrder(file.database);
  const live = paidEvent(order, { event: { livemode: true } });
  assert.equal((await file.service.deliver(live)).status, 200);
  const row = await finishedEvent(file.database, live.id);
  assert.equal(row.status, 'failed');
  assert.match(row.last_error ?? '', /livemode mismatch/);
  assert.equal((await orderRow(file.database, order.order_id)).status, 'pending');
});
