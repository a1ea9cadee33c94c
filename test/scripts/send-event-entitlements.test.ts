// `npm run send-event -- --entitlements` as a developer runs it against `npm start`: after a plan
// that names Stripe Features was bought (its checkout links the Stripe customer), the summary
// Stripe would send makes those features the account's, told to the app once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newAccountId } from '../support/factories.js';
import { notifyingServiceForFile, receivedWhere } from '../support/notification-receiver.js';
import { sendEvent } from '../support/send-event.js';
import { waitFor } from '../support/wait-for.js';

const file = notifyingServiceForFile();

test("a plan with features, bought and paid, then --entitlements: the account holds the plan's features, told once", async () => {
  const plan = { id: 'team', name: 'Team', amount: 4900, currency: 'chf', credits: 100, interval: 'month', features: ['priority_support', 'sso'] };
  assert.equal((await file.service.call('POST', '/admin/api/plans', { body: plan })).status, 201);
  const accountId = newAccountId();
  const reply = await file.service.call('POST', '/api/subscriptions', { body: { plan_id: 'team', account_id: accountId } });
  assert.equal(reply.status, 201);
  await sendEvent(file, ['--subscription', reply.body.subscription_id as string, '--in-order']);
  await waitFor(
    'the first period paid',
    receivedWhere(file.receiver, (n) => n.type === 'subscription.period_paid' && n.data.account_id === accountId),
  );

  await sendEvent(file, ['--entitlements', accountId]);
  const [told] = await waitFor(
    'account.entitlements_updated',
    receivedWhere(file.receiver, (n) => n.type === 'account.entitlements_updated' && n.data.account_id === accountId),
  );
  assert.deepEqual([told!.data.added, told!.data.entitlements], [plan.features, plan.features]);
  const entitlements = await file.service.call('GET', `/api/accounts/${accountId}/entitlements`);
  assert.deepEqual(
    (entitlements.body.entitlements as Array<{ lookup_key: string }>).map((e) => e.lookup_key),
    plan.features,
  );
});

test('--entitlements for an account with no linked Stripe customer says so', async () => {
  await assert.rejects(sendEvent(file, ['--entitlements', newAccountId()]), /has no linked Stripe customer/);
});
