// GET /api/accounts/:id/quota and POST /api/accounts/:id/runs: a credit is consumed atomically,
// so however many runs race for an account, exactly as many succeed as it has credits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordOrderPayments } from '../../../src/modules/credits/order-payment.js';
import { givenOrder, newAccountId } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

const quota = async (accountId: string) => {
  const reply = await file.service.call('GET', `/api/accounts/${accountId}/quota`);
  assert.equal(reply.status, 200);
  return reply.body;
};
const run = (accountId: string) => file.service.call('POST', `/api/accounts/${accountId}/runs`);

test('the quota of an account that never bought anything is zeros', async () => {
  const accountId = newAccountId();
  assert.deepEqual(await quota(accountId), { account_id: accountId, granted: 0, used: 0, remaining: 0 });
});

test('60 concurrent runs on 40 credits: exactly 40 succeed, each seeing its own balance, and 20 are 402', async () => {
  const order = await givenOrder(file.database);
  const payment = {
    orderId: order.order_id,
    eventId: 'evt_test_quota_grant',
    amount: order.amount,
    currency: order.currency,
    checkoutSessionId: order.checkout_session_id!,
    paymentIntentId: null,
  };
  assert.deepEqual(await file.database.db.transaction().execute((tx) => recordOrderPayments(tx, [payment])), [
    {
      outcome: 'granted',
      grant: { orderId: order.order_id, accountId: order.account_id, packageId: order.package_id, credits: 40, amount: order.amount, currency: order.currency },
    },
  ]);
  assert.deepEqual(await quota(order.account_id), { account_id: order.account_id, granted: 40, used: 0, remaining: 40 });

  const replies = await Promise.all(Array.from({ length: 60 }, () => run(order.account_id)));
  const succeeded = replies.filter((r) => r.status === 201);
  const refused = replies.filter((r) => r.status === 402);
  assert.equal(succeeded.length, 40);
  assert.equal(refused.length, 20);
  // Serialised consumers: the balances left behind are 39, 38, ... 0, each seen once.
  const remaining = succeeded.map((r) => r.body.remaining as number).sort((a, b) => a - b);
  assert.deepEqual(
    remaining,
    Array.from({ length: 40 }, (_, i) => i),
  );
  for (const reply of refused) assert.match(String(reply.body.error), /no credits left/);

  assert.deepEqual(await quota(order.account_id), { account_id: order.account_id, granted: 40, used: 40, remaining: 0 });
});

test('a run on an account with nothing is 402 and leaves its quota at zeros', async () => {
  const accountId = newAccountId();
  const reply = await run(accountId);
  assert.equal(reply.status, 402);
  assert.equal(typeof reply.body.error, 'string');
  assert.deepEqual(await quota(accountId), { account_id: accountId, granted: 0, used: 0, remaining: 0 });
});
