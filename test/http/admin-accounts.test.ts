// GET /admin/api/accounts/:account_id: one of the app's accounts as ops look it up, assembled from
// every module and the outbox: its balance, each grant with the order or paid period behind it and
// what a dispute took back of it, the runs that used its credits, its subscription and dispute,
// and the notifications the app was sent about it, each with its sequence. Another account's
// records never show; an account nothing is known of is an empty view; a malformed id is a 400
// naming the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PERIOD_SECONDS, periodEvents } from '../../src/modules/billing/sample-events.js';
import { disputeObject, sampleEvent } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, orderRow, paidEvent, paidOrder } from '../support/factories.js';
import { notifyingServiceForFile } from '../support/notification-receiver.js';
import { API_TOKEN } from '../support/service.js';
import { subscribedThroughApi } from '../support/subscriptions.js';

const file = notifyingServiceForFile();

/** Delivered and finished; none failed (a period's telemetry events end 'ignored'). */
async function delivered(...events: Array<{ id: string }>) {
  for (const event of events) assert.equal((await file.service.deliver(event)).status, 200);
  for (const event of events) assert.notEqual((await finishedEvent(file.database, event.id)).status, 'failed', event.id);
}

test("an account's balance, grants with what took them back, runs, subscription, dispute and notifications", async () => {
  // A subscription's first period paid (100 credits), then a package (40) whose payment is disputed.
  const subscription = await subscribedThroughApi(file);
  const account = subscription.accountId;
  const start = Math.floor(Date.now() / 1000) - 60;
  const period = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
  await delivered(...period);
  const invoiceId = (period.find((e) => e.type === 'invoice.paid')!.data.object as { id: string }).id;
  const order = await givenOrder(file.database, { accountId: account });
  await delivered(paidEvent(order));
  const { payment_intent_id: paymentIntentId } = await orderRow(file.database, order.order_id);
  const dispute = disputeObject({ paymentIntentId, amount: order.amount, currency: order.currency, status: 'needs_response' });
  await delivered(sampleEvent('charge.dispute.funds_withdrawn', dispute));
  const run = await file.service.call('POST', `/api/accounts/${account}/runs`, { body: { quantity: 3 } });
  assert.equal(run.status, 201);
  // Another account's purchase shows nowhere in this one.
  await paidOrder(file.database, file.service);

  const reply = await file.service.call('GET', `/admin/api/accounts/${account}`);
  assert.equal(reply.status, 200);
  const view = reply.body as {
    account_id: string;
    balance: unknown;
    grants: Array<{ for: string; id: string; credits: number; taken_back: number; amount: number; currency: string; fields: Record<string, unknown> }>;
    runs: Array<{ run_id: string; quantity: number; reversed_at: string | null }>;
    records: Array<{ kind: string; id: string; fields: Record<string, unknown> }>;
    notifications: Array<{ type: string; account_id: string; sequence: number }>;
  };
  assert.equal(view.account_id, account);
  assert.deepEqual(view.balance, { granted: 100, used: 3, remaining: 97 });
  assert.deepEqual(
    view.grants.map((g) => [g.for, g.id, g.credits, g.taken_back, g.amount, g.currency]),
    [
      ['order', order.order_id, 40, 40, 4900, 'chf'],
      ['period', invoiceId, 100, 0, subscription.amount, subscription.currency],
    ],
  );
  assert.equal(view.grants[1]!.fields.subscription_id, subscription.subscriptionId);
  assert.deepEqual(
    view.runs.map((r) => [r.run_id, r.quantity, r.reversed_at]),
    [[run.body.run_id, 3, null]],
  );
  assert.deepEqual(
    view.records.map((r) => [r.kind, r.id]).sort(),
    [
      ['dispute', dispute.id],
      ['subscription', subscription.subscriptionId],
    ].sort(),
  );
  assert.equal(view.records.find((r) => r.kind === 'subscription')!.fields.status, 'active');
  assert.equal(view.records.find((r) => r.kind === 'dispute')!.fields.credits_taken, 40);
  // Newest first, each the account's with its own sequence: 1, 2, ... with no gap.
  assert.ok(view.notifications.every((n) => n.account_id === account));
  assert.deepEqual(
    view.notifications.map((n) => n.sequence),
    view.notifications.map((_, i) => view.notifications.length - i),
  );
  assert.deepEqual(
    new Set(view.notifications.map((n) => n.type)),
    new Set(['subscription.updated', 'subscription.period_paid', 'order.paid', 'order.disputed']),
  );
});

test('an account nothing is known of is an empty view', async () => {
  const reply = await file.service.call('GET', '/admin/api/accounts/acct_never_seen');
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, {
    account_id: 'acct_never_seen',
    balance: { granted: 0, used: 0, remaining: 0 },
    grants: [],
    runs: [],
    records: [],
    notifications: [],
  });
});

test('a malformed account id is a 400 naming the field; the API token is not enough', async () => {
  const malformed = await file.service.call('GET', '/admin/api/accounts/acct%20with%20spaces');
  assert.equal(malformed.status, 400);
  assert.match(String(malformed.body.error), /^account_id: must be an id/);
  assert.equal((await file.service.call('GET', '/admin/api/accounts/acct_any', { token: API_TOKEN })).status, 401);
});
