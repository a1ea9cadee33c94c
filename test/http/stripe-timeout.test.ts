// A Stripe call that outlasts STRIPE_TIMEOUT_SECONDS is abandoned (the SDK tries twice), the
// checkout answers 502 naming a timeout, and the call is counted and logged as a Stripe timeout,
// never as a database problem. The order stays pending for a retry with the same key.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { newAccountId } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web', STRIPE_TIMEOUT_SECONDS: '1' } });

test('a Stripe slower than STRIPE_TIMEOUT_SECONDS: 502 "timeout", counted as a timeout, the order pending', async () => {
  file.service.stripe.setDelay(5_000);
  const reply = await file.service.call('POST', '/api/checkout', {
    body: { package_id: 'starter', account_id: newAccountId() },
    headers: { 'idempotency-key': randomUUID() },
  });
  file.service.stripe.setDelay(0);
  assert.equal(reply.status, 502);
  assert.match(String(reply.body.error), /Stripe could not create the checkout session \(timeout\)/);
  const order = await file.service.call('GET', `/api/orders/${String(reply.body.order_id)}`);
  assert.equal(order.body.status, 'pending');

  const metrics = await (await fetch(`${file.service.url}/metrics`, { headers: { authorization: `Bearer ${file.service.config.metricsToken}` } })).text();
  assert.match(metrics, /stripe_inbox_stripe_request_seconds_count\{operation="checkout_session_create",outcome="timeout"\} 1\n/);
  assert.doesNotMatch(metrics, /stripe_inbox_db_pool_busy_total\{pool="api"\} [1-9]/);
});
