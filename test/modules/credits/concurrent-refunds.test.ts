// Refunds of one order asked at once, on two instances of the service against
// one database, never together ask Stripe for more than the order's amount. Each refund is held
// back under the order's lock before Stripe is called; what does not fit is refused with 409
// before Stripe, whatever Stripe itself would have said.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OrderRow } from '../../../src/modules/credits/tables.js';
import { refundedCharge, sampleEvent } from '../../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { finishedEvent, paidOrder } from '../../support/factories.js';
import { startTestService, type HttpReply, type TestService } from '../../support/service.js';

let database: TestDatabase;
/** Two containers: each has its own pools; they share the database and Stripe. */
let first: TestService;
let second: TestService;

before(async () => {
  database = await createTestDatabase();
  first = await startTestService(database);
  second = await startTestService(database, { stripe: first.stripe, env: { ROLE: 'web' } });
});

after(async () => {
  await second?.close();
  await first?.close();
  await database?.close();
});

let keys = 0;
const refund = (service: TestService, order: OrderRow, body: { amount?: number } = {}) =>
  service.call('POST', `/admin/api/orders/${order.order_id}/refund`, { body, headers: { 'idempotency-key': `concurrent-refund-${++keys}` } });

/** The amounts of the refunds Stripe was asked for, for this order's payment. */
const amountsSent = (order: OrderRow) =>
  first.stripe.requests
    .filter((r) => r.path === '/v1/refunds' && r.params.payment_intent === order.payment_intent_id)
    .map((r) => Number(r.params.amount))
    .sort((a, b) => a - b);

const statuses = (replies: HttpReply[]) => replies.map((reply) => reply.status).sort();

test('two full refunds of one order at once, one per instance: one reaches Stripe, the other is refused before it', async () => {
  // Five orders: the two requests meet at a different moment each time.
  for (let trial = 1; trial <= 5; trial++) {
    const order = await paidOrder(database, first);
    const replies = await Promise.all([refund(first, order), refund(second, order)]);
    assert.deepEqual(statuses(replies), [201, 409], `trial ${trial}: ${JSON.stringify(replies)}`);
    const refused = replies.find((reply) => reply.status === 409)!;
    assert.match(refused.body.error as string, /nothing is left to refund of order ord_\w+ \(4900 chf\)/);
    assert.equal(refused.body.refundable_amount, 0);
    assert.deepEqual(amountsSent(order), [order.amount], `trial ${trial}: one full refund sent to Stripe`);
  }
});

test('partial refunds at once that together fit are both sent; one that would exceed what is left is refused', async () => {
  const order = await paidOrder(database, first);
  assert.deepEqual(statuses(await Promise.all([refund(first, order, { amount: 2000 }), refund(second, order, { amount: 2000 })])), [201, 201]);

  const over = await refund(second, order, { amount: 1000 });
  assert.equal(over.status, 409);
  assert.match(over.body.error as string, /1000 is more than the 900 chf left to refund of order ord_\w+ \(4900 chf\).*ask for at most 900/);
  assert.equal(over.body.refundable_amount, 900);

  assert.equal((await refund(first, order, { amount: 900 })).status, 201);
  assert.deepEqual(amountsSent(order), [900, 2000, 2000]);
});

test('two partial refunds at once that together exceed the order, one per instance: one is sent, the other refused before Stripe', async () => {
  for (let trial = 1; trial <= 3; trial++) {
    const order = await paidOrder(database, first);
    const replies = await Promise.all([refund(first, order, { amount: 3000 }), refund(second, order, { amount: 3000 })]);
    assert.deepEqual(statuses(replies), [201, 409], `trial ${trial}: ${JSON.stringify(replies)}`);
    assert.equal(replies.find((reply) => reply.status === 409)!.body.refundable_amount, 1900);
    assert.deepEqual(amountsSent(order), [3000], `trial ${trial}: one partial refund sent to Stripe`);
  }
});

test('a refund Stripe has reported is counted once: its charge.refunded does not shrink what is left', async () => {
  const order = await paidOrder(database, first);
  assert.equal((await refund(first, order, { amount: 1000 })).status, 201);
  const reported = sampleEvent(
    'charge.refunded',
    refundedCharge({ paymentIntentId: order.payment_intent_id, amount: order.amount, currency: order.currency, amountRefunded: 1000, orderId: order.order_id }),
  );
  assert.equal((await first.deliver(reported)).status, 200);
  assert.equal((await finishedEvent(database, reported.id)).status, 'processed');

  const rest = await refund(second, order);
  assert.equal(rest.status, 201);
  assert.equal(rest.body.amount, order.amount - 1000);
  assert.deepEqual(amountsSent(order), [1000, order.amount - 1000]);
});

test('a refund whose call to Stripe failed holds nothing back; its retry is refused once another refund took the rest', async () => {
  const order = await paidOrder(database, first);
  const key = { 'idempotency-key': `concurrent-refund-failed-${order.order_id}` };
  const path = `/admin/api/orders/${order.order_id}/refund`;
  first.stripe.failNext(2); // the SDK's first try and its one retry (src/stripe/client.ts)
  assert.equal((await first.call('POST', path, { body: {}, headers: key })).status, 502);

  assert.equal((await refund(second, order)).status, 201);
  const retried = await first.call('POST', path, { body: {}, headers: key });
  assert.equal(retried.status, 409);
  assert.equal(retried.body.refundable_amount, 0);
  assert.deepEqual(amountsSent(order), [order.amount, order.amount, order.amount], 'the two failed tries and the one refund; the retry was not sent');
});
