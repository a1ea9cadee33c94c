// POST /admin/api/orders/:id/refund (docs/design.md, invariant 9): the outbound Idempotency-Key is
// derived from the order and the refund's sequence, so a retried request never refunds twice and
// a second partial refund is not mistaken for a replay of the first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import type { OrderRow } from '../../../src/modules/credits/tables.js';

import { givenOrder, paidOrder } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';
import { waitFor } from '../../support/wait-for.js';

const file = serviceForFile();

const refund = (orderId: string, key: string | undefined, body: unknown = {}) =>
  file.service.call('POST', `/admin/api/orders/${orderId}/refund`, { body, headers: key === undefined ? {} : { 'idempotency-key': key } });

const refundRequests = (order: OrderRow) =>
  file.service.stripe.requests.filter((r) => r.path === '/v1/refunds' && r.params.payment_intent === order.payment_intent_id);

test('a refund needs an Idempotency-Key, and the admin token', async () => {
  const order = await paidOrder(file.database, file.service);
  assert.equal((await refund(order.order_id, undefined)).status, 400);
  const withApiToken = await file.service.call('POST', `/admin/api/orders/${order.order_id}/refund`, {
    body: {},
    headers: { 'idempotency-key': 'k' },
    token: 'test-api-token-0123456789',
  });
  assert.equal(withApiToken.status, 401);
  assert.equal(refundRequests(order).length, 0);
});

test('a retried request refunds once; a second refund gets the next sequence number', async () => {
  const order = await paidOrder(file.database, file.service);
  const first = await refund(order.order_id, 'ops-refund-1', { amount: 1000 });
  assert.equal(first.status, 201);
  assert.equal(first.body.amount, 1000);
  const retried = await refund(order.order_id, 'ops-refund-1', { amount: 1000 });
  assert.deepEqual(retried, first);
  const second = await refund(order.order_id, 'ops-refund-2', { amount: 1000 });
  assert.equal(second.status, 201);
  assert.notEqual(second.body.refund_id, first.body.refund_id);

  assert.deepEqual(
    refundRequests(order).map((r) => [r.idempotencyKey, r.params.amount]),
    [
      [`refund:${order.order_id}:1`, '1000'],
      [`refund:${order.order_id}:2`, '1000'],
    ],
  );
  assert.equal((await refund(order.order_id, 'ops-refund-1', { amount: 500 })).status, 422);
});

test('when Stripe fails: 502, and a retry with the same key sends Stripe the same key and amount', async () => {
  const order = await paidOrder(file.database, file.service);
  file.service.stripe.failNext(2); // the SDK's first try and its one retry (src/stripe/client.ts)
  const failed = await refund(order.order_id, 'ops-refund-flaky');
  assert.equal(failed.status, 502);
  assert.equal(failed.body.order_id, order.order_id);
  const retried = await refund(order.order_id, 'ops-refund-flaky');
  assert.equal(retried.status, 201);
  assert.equal(retried.body.amount, order.amount, 'no amount: the rest of the order');
  const requests = refundRequests(order);
  assert.equal(requests.length, 3);
  assert.deepEqual(new Set(requests.map((r) => `${r.idempotencyKey} ${String(r.params.amount)}`)), new Set([`refund:${order.order_id}:1 ${order.amount}`]));
  assert.equal([...file.service.stripe.refunds.values()].filter((r) => r.payment_intent === order.payment_intent_id).length, 1);
});

test("a retry after Stripe's idempotency window is refused: the first request may have refunded, and Stripe would not know its key", async () => {
  const order = await paidOrder(file.database, file.service);
  file.service.stripe.failNext(2);
  assert.equal((await refund(order.order_id, 'ops-refund-late')).status, 502);
  // The caller comes back after Stripe has forgotten refund:<order>:1.
  await file.database.db
    .updateTable('api_idempotency_keys')
    .set({ created_at: sql`now() - interval '23 hours 1 minute'` })
    .where('idempotency_key', '=', 'refund:ops-refund-late')
    .execute();
  const late = await refund(order.order_id, 'ops-refund-late');
  assert.equal(late.status, 422);
  assert.match(late.body.error as string, /more than 23 hours ago.*new Idempotency-Key/);
  assert.equal(refundRequests(order).length, 2, 'only the two failed tries reached Stripe');

  const fresh = await refund(order.order_id, 'ops-refund-late-2');
  assert.equal(fresh.status, 201);
  assert.equal(refundRequests(order).at(-1)!.idempotencyKey, `refund:${order.order_id}:2`);
});

test('two refunds of one order at once take the next two numbers', async () => {
  const order = await paidOrder(file.database, file.service);
  // Both requests arrive while another transaction holds the order, so both wait for it together.
  const holder = await file.database.pool.connect();
  try {
    await holder.query('begin');
    await holder.query('select 1 from orders where order_id = $1 for update', [order.order_id]);
    const both = Promise.all([refund(order.order_id, 'ops-refund-a', { amount: 1000 }), refund(order.order_id, 'ops-refund-b', { amount: 1000 })]);
    // Asked outside the holder's transaction, which would see one snapshot of the activity.
    await waitFor('both requests to wait for the order', async () => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(file.database.db);
      return rows[0]!.n === 2;
    });
    await holder.query('commit');
    assert.deepEqual(
      (await both).map((reply) => reply.status),
      [201, 201],
    );
  } finally {
    holder.release(true); // closed: a failure above may have left its transaction open
  }
  assert.deepEqual(
    refundRequests(order)
      .map((r) => r.idempotencyKey)
      .sort(),
    [`refund:${order.order_id}:1`, `refund:${order.order_id}:2`],
  );
});

test('a key an API caller used for a checkout is not the same key for a refund: keys are scoped by operation', async () => {
  const order = await paidOrder(file.database, file.service);
  const key = 'shared-key-1';
  const checkout = await file.service.call('POST', '/api/checkout', {
    body: { package_id: 'starter', account_id: order.account_id },
    headers: { 'idempotency-key': key },
  });
  assert.equal(checkout.status, 201);
  const refunded = await refund(order.order_id, key, { amount: 100 });
  assert.equal(refunded.status, 201);
  assert.equal(refunded.body.order_id, order.order_id);
});

test('what cannot be refunded is refused before Stripe is called', async () => {
  const pending = await givenOrder(file.database);
  assert.equal((await refund(pending.order_id, 'ops-pending')).status, 409);
  assert.equal((await refund('ord_missing', 'ops-missing')).status, 404);
  const order = await paidOrder(file.database, file.service);
  assert.equal((await refund(order.order_id, 'ops-too-much', { amount: order.amount + 1 })).status, 400);
  assert.equal((await refund(order.order_id, 'ops-negative', { amount: -5 })).status, 400);
  assert.equal(refundRequests(order).length, 0);
});
