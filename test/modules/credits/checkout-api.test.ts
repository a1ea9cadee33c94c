// POST /api/checkout and its neighbours (its documented contract and docs/design.md, invariant 9):
// an order is made once per inbound Idempotency-Key, and every call to Stripe for an order carries
// the outbound key `checkout-session:<order_id>`, across SDK retries and across client retries
// after a 502. The worker role is off: nothing here needs it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { RecordedStripeRequest } from '../../../src/dev/offline-stripe/index.js';

import { newAccountId } from '../../support/factories.js';
import { waitFor } from '../../support/wait-for.js';
import { ADMIN_TOKEN, type HttpReply, serviceForFile } from '../../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

const checkout = (body: unknown, idempotencyKey?: string): Promise<HttpReply> =>
  file.service.call('POST', '/api/checkout', { body, ...(idempotencyKey !== undefined && { headers: { 'idempotency-key': idempotencyKey } }) });

/** What the fake Stripe received for one order: the order id travels in metadata. */
const sessionCreatesFor = (orderId: unknown): RecordedStripeRequest[] =>
  file.service.stripe.requests.filter(
    (r) => r.method === 'POST' && r.path === '/v1/checkout/sessions' && (r.params.metadata as Record<string, unknown> | undefined)?.order_id === orderId,
  );
const sessionsFor = (orderId: unknown) =>
  [...file.service.stripe.sessions.values()].filter((s) => (s.metadata as Record<string, unknown>).order_id === orderId);

async function ordersOf(accountId: string) {
  return file.database.db.selectFrom('orders').selectAll().where('account_id', '=', accountId).execute();
}

describe('authentication', () => {
  const routes: Array<[string, string]> = [
    ['GET', '/api/packages'],
    ['POST', '/api/checkout'],
    ['GET', '/api/orders/ord_x'],
    ['GET', '/api/accounts/acct_x/quota'],
    ['POST', '/api/accounts/acct_x/runs'],
  ];
  for (const [method, path] of routes) {
    test(`${method} ${path} is 401 without a token, with a wrong one and with the admin token`, async () => {
      for (const token of [null, 'not-the-api-token-0123456789', ADMIN_TOKEN]) {
        const reply = await file.service.call(method, path, { token, ...(method === 'POST' && { body: { package_id: 'starter', account_id: 'acct_x' } }) });
        assert.equal(reply.status, 401, `token ${String(token)}`);
        assert.equal(typeof reply.body.error, 'string');
      }
    });
  }

  test('an unauthenticated checkout makes no order and calls no Stripe', async () => {
    const accountId = newAccountId();
    const requestsBefore = file.service.stripe.requests.length;
    assert.equal((await file.service.call('POST', '/api/checkout', { token: null, body: { package_id: 'starter', account_id: accountId } })).status, 401);
    assert.deepEqual(await ordersOf(accountId), []);
    assert.equal(file.service.stripe.requests.length, requestsBefore);
  });
});

test('GET /api/packages lists the seeded starter package in the documented shape', async () => {
  const reply = await file.service.call('GET', '/api/packages');
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, [{ id: 'starter', name: 'Starter: 40 runs', amount: 4900, currency: 'chf', credits: 40, features: [] }]);
});

describe('a checkout', () => {
  test('is 201 with a pending order and one Stripe session priced inline, keyed by the order', async () => {
    const accountId = newAccountId();
    const reply = await checkout({ package_id: 'starter', account_id: accountId, email: 'buyer@example.test' });
    assert.equal(reply.status, 201);
    assert.deepEqual(Object.keys(reply.body).sort(), ['checkout_session_id', 'order_id', 'url']);
    const { order_id: orderId, checkout_session_id: sessionId } = reply.body;

    const [request, ...more] = sessionCreatesFor(orderId);
    assert.equal(more.length, 0);
    assert.equal(request?.idempotencyKey, `checkout-session:${String(orderId)}`);
    assert.deepEqual(request?.params.metadata, { order_id: orderId });
    assert.equal(request?.params.client_reference_id, orderId);
    assert.equal(request?.params.customer_email, 'buyer@example.test');
    assert.deepEqual(request?.params.line_items, [
      { quantity: '1', price_data: { currency: 'chf', unit_amount: '4900', product_data: { name: 'Starter: 40 runs' } } },
    ]);
    assert.equal(file.service.stripe.sessions.get(String(sessionId))?.url, reply.body.url);

    const order = await file.service.call('GET', `/api/orders/${String(orderId)}`);
    assert.equal(order.status, 200);
    const { order_id, status, package_id, account_id, credits, checkout_session_id } = order.body;
    assert.deepEqual(
      { order_id, status, package_id, account_id, credits, checkout_session_id },
      { order_id: orderId, status: 'pending', package_id: 'starter', account_id: accountId, credits: 40, checkout_session_id: sessionId },
    );
  });

  test('GET /api/orders/:id of an unknown order is 404', async () => {
    const reply = await file.service.call('GET', '/api/orders/ord_does_not_exist');
    assert.equal(reply.status, 404);
    assert.equal(typeof reply.body.error, 'string');
  });
});

describe('the inbound Idempotency-Key', () => {
  test('same key and body replays the first response: one order, one session', async () => {
    const key = randomUUID();
    const body = { package_id: 'starter', account_id: newAccountId() };
    const first = await checkout(body, key);
    const second = await checkout(body, key);
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.deepEqual(second.body, first.body);
    assert.equal((await ordersOf(body.account_id)).length, 1);
    assert.equal(sessionCreatesFor(first.body.order_id).length, 1);
  });

  test('same key with a different body is 422 and makes no order', async () => {
    const key = randomUUID();
    assert.equal((await checkout({ package_id: 'starter', account_id: newAccountId() }, key)).status, 201);
    const other = newAccountId();
    const reply = await checkout({ package_id: 'starter', account_id: other }, key);
    assert.equal(reply.status, 422);
    assert.match(String(reply.body.error), /Idempotency-Key/);
    assert.deepEqual(await ordersOf(other), []);
  });

  test('same key while the first request is still at Stripe is 409; one order, one session', async () => {
    const key = randomUUID();
    const body = { package_id: 'starter', account_id: newAccountId() };
    const atStripe = file.service.stripe.requests.length;
    file.service.stripe.setDelay(1_500);
    let first: Promise<HttpReply>;
    try {
      first = checkout(body, key);
      // The first request is in flight once Stripe has it; the second arrives meanwhile.
      await waitFor('the first checkout to reach Stripe', () => Promise.resolve(file.service.stripe.requests.length > atStripe));
      const second = await checkout(body, key);
      assert.equal(second.status, 409);
      assert.match(String(second.body.error), /in progress/);
    } finally {
      file.service.stripe.setDelay(0);
    }
    const created = await first;
    assert.equal(created.status, 201);
    const orders = await ordersOf(body.account_id);
    assert.deepEqual(
      orders.map((o) => o.order_id),
      [created.body.order_id],
    );
    assert.equal(sessionCreatesFor(created.body.order_id).length, 1);
    // Once the first is done, the key replays its response.
    assert.deepEqual(await checkout(body, key), created);
  });
});

describe('when Stripe fails', () => {
  test('a single 500 is retried by the SDK with the same outbound key: 201, one session', async () => {
    file.service.stripe.failNext(1);
    const reply = await checkout({ package_id: 'starter', account_id: newAccountId() });
    assert.equal(reply.status, 201);
    const requests = sessionCreatesFor(reply.body.order_id);
    assert.equal(requests.length, 2);
    assert.deepEqual(new Set(requests.map((r) => r.idempotencyKey)), new Set([`checkout-session:${String(reply.body.order_id)}`]));
    assert.deepEqual(
      sessionsFor(reply.body.order_id).map((s) => s.id),
      [reply.body.checkout_session_id],
    );
  });

  test('an outage is a 502 naming the order, which stays pending; a retry with the same key completes it', async () => {
    const key = randomUUID();
    const body = { package_id: 'starter', account_id: newAccountId() };
    file.service.stripe.failNext(2); // the SDK's first try and its one retry (src/stripe/client.ts)
    const failed = await checkout(body, key);
    assert.equal(failed.status, 502);
    assert.match(String(failed.body.error), /Stripe could not create the checkout session/);
    assert.equal(typeof failed.body.order_id, 'string');
    const orderId = String(failed.body.order_id);
    const pending = await file.service.call('GET', `/api/orders/${orderId}`);
    assert.equal(pending.body.status, 'pending');
    assert.equal(pending.body.checkout_session_id, null);
    assert.equal(sessionsFor(orderId).length, 0);

    const retried = await checkout(body, key);
    assert.equal(retried.status, 201);
    assert.equal(retried.body.order_id, orderId);
    assert.equal((await ordersOf(body.account_id)).length, 1);
    const requests = sessionCreatesFor(orderId);
    assert.equal(requests.length, 3);
    assert.deepEqual(new Set(requests.map((r) => r.idempotencyKey)), new Set([`checkout-session:${orderId}`]));
    assert.deepEqual(
      sessionsFor(orderId).map((s) => s.id),
      [retried.body.checkout_session_id],
    );
    assert.equal((await file.service.call('GET', `/api/orders/${orderId}`)).body.checkout_session_id, retried.body.checkout_session_id);
  });
});

describe('bad input is a 400 naming the field, with no order and no Stripe call', () => {
  const cases: Array<[string, (accountId: string) => unknown, RegExp]> = [
    ['a missing account_id', () => ({ package_id: 'starter' }), /account_id/],
    ['an unknown extra field', (accountId) => ({ package_id: 'starter', account_id: accountId, coupon: 'FREE' }), /coupon/],
    ['a malformed email', (accountId) => ({ package_id: 'starter', account_id: accountId, email: 'not-an-email' }), /email/],
    ['an unknown package_id', (accountId) => ({ package_id: 'platinum', account_id: accountId }), /package_id/],
    // Postgres text cannot store a NUL character: refused here, never a 500 from the insert.
    ['a NUL in account_id', (accountId) => ({ package_id: 'starter', account_id: `${accountId}\u0000` }), /^account_id: /],
    ['a NUL in email', (accountId) => ({ package_id: 'starter', account_id: accountId, email: 'buyer\u0000@example.com' }), /^email: /],
    ['a NUL in package_id', (accountId) => ({ package_id: 'starter\u0000', account_id: accountId }), /^package_id: /],
  ];
  for (const [name, body, field] of cases) {
    test(name, async () => {
      const accountId = newAccountId();
      const requestsBefore = file.service.stripe.requests.length;
      const reply = await checkout(body(accountId));
      assert.equal(reply.status, 400);
      assert.match(String(reply.body.error), field);
      assert.deepEqual(await ordersOf(accountId), []);
      assert.equal(file.service.stripe.requests.length, requestsBefore);
    });
  }

  test('an unknown package_id with an Idempotency-Key', async () => {
    const accountId = newAccountId();
    const reply = await checkout({ package_id: 'platinum', account_id: accountId }, randomUUID());
    assert.equal(reply.status, 400);
    assert.match(String(reply.body.error), /package_id/);
    assert.deepEqual(await ordersOf(accountId), []);
  });
});
