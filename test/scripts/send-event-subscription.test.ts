// `npm run send-event -- --subscription` as a developer runs it against `npm start`: the app is
// told of real periods, the first from now for the plan's interval, each renewal the next one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { billingPeriodEnd } from '../../src/stripe/billing-period.js';
import { newAccountId } from '../support/factories.js';
import { notifyingServiceForFile, receivedWhere } from '../support/notification-receiver.js';
import { sendEvent } from '../support/send-event.js';
import { waitFor } from '../support/wait-for.js';

const file = notifyingServiceForFile();

const seconds = (iso: unknown) => Date.parse(iso as string) / 1000;

test('each subscription.period_paid tells a real period: the first from now for a month (pro_monthly), the renewal the month after', async () => {
  const reply = await file.service.call('POST', '/api/subscriptions', { body: { plan_id: 'pro_monthly', account_id: newAccountId() } });
  assert.equal(reply.status, 201);
  const subscriptionId = reply.body.subscription_id as string;
  const periodsPaid = (count: number) =>
    waitFor(
      `${count} period(s) paid`,
      receivedWhere(file.receiver, (n) => n.type === 'subscription.period_paid' && n.data.subscription_id === subscriptionId, count),
    );

  const sentFrom = Math.floor(Date.now() / 1000);
  await sendEvent(file, ['--subscription', subscriptionId]);
  const sentBy = Math.ceil(Date.now() / 1000);
  const [first] = await periodsPaid(1);
  const start = seconds(first!.data.period_start);
  assert.ok(start >= sentFrom && start <= sentBy, `the first period starts when it is sent: ${String(first!.data.period_start)}`);
  assert.equal(seconds(first!.data.period_end), billingPeriodEnd(start, 'month'));

  // The renewal follows the period the service holds (its subscription's current_period_end).
  await waitFor('the subscription active', async () =>
    (await file.service.call('GET', `/api/subscriptions/${subscriptionId}`)).body.current_period_end ? true : undefined,
  );
  await sendEvent(file, ['--subscription', subscriptionId, '--cycle', '2']);
  const renewal = (await periodsPaid(2)).find((n) => n.id !== first!.id)!;
  assert.equal(seconds(renewal.data.period_start), seconds(first!.data.period_end));
  assert.equal(seconds(renewal.data.period_end), billingPeriodEnd(seconds(first!.data.period_end), 'month'));
});

test('a billing period ends on the anchor’s day, or the month’s last when it has fewer', () => {
  const at = (iso: string) => Date.parse(iso) / 1000;
  assert.equal(billingPeriodEnd(at('2027-01-31T10:00:00Z'), 'month'), at('2027-02-28T10:00:00Z'));
  assert.equal(billingPeriodEnd(at('2028-01-31T10:00:00Z'), 'month', 3), at('2028-04-30T10:00:00Z'));
  assert.equal(billingPeriodEnd(at('2028-02-29T00:00:00Z'), 'year'), at('2029-02-28T00:00:00Z'));
  assert.equal(billingPeriodEnd(at('2027-12-30T00:00:00Z'), 'week', 2), at('2028-01-13T00:00:00Z'));
  assert.equal(billingPeriodEnd(at('2027-12-31T00:00:00Z'), 'day'), at('2028-01-01T00:00:00Z'));
});
