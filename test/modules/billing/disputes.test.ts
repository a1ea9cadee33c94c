// A dispute of a subscription's payment, through the webhook and the real worker: the paid
// period's unused credits are taken back while the dispute's funds are withdrawn and given back
// when they are reinstated, once each, in any arrival order; the period's refunds and its dispute
// share one revocation target, so neither takes what the other took.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PERIOD_SECONDS, periodEvents } from '../../../src/modules/billing/sample-events.js';
import { disputeObject, randomStripeId, refundedCharge, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent, quotaOf } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';
import { subscribedThroughApi, type GivenSubscription } from '../../support/subscriptions.js';

const file = serviceForFile();

async function deliverAndFinish(event: SampleEvent) {
  assert.equal((await file.service.deliver(event)).status, 200);
  const row = await finishedEvent(file.database, event.id);
  assert.equal(row.status, 'processed', `${event.type}: ${row.status}, ${row.last_error}`);
}

/** A subscription whose first period is paid and granted (100 credits), with its payment's PaymentIntent. */
async function paidPeriod(): Promise<GivenSubscription & { paymentIntentId: string }> {
  const subscription = await subscribedThroughApi(file);
  const start = Math.floor(Date.now() / 1000) - 60;
  const events = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
  for (const event of events) assert.equal((await file.service.deliver(event)).status, 200);
  for (const event of events) await finishedEvent(file.database, event.id);
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
  const paymentIntentId = (events.find((e) => e.type === 'payment_intent.succeeded')!.data.object as { id: string }).id;
  return { ...subscription, paymentIntentId };
}

function disputeOf(period: { paymentIntentId: string; amount: number; currency: string }) {
  const ids = { disputeId: randomStripeId('dp'), chargeId: randomStripeId('ch') };
  const at = Math.floor(Date.now() / 1000);
  return (type: string, status: string, minutes: number) =>
    sampleEvent(type, disputeObject({ paymentIntentId: period.paymentIntentId, amount: period.amount, currency: period.currency, status, ...ids }), {
      created: at + minutes * 60,
    });
}

const grantOf = (subscriptionId: string) =>
  file.database.db
    .selectFrom('invoice_grants')
    .select(['revocation_target', 'revoked_credits'])
    .where('subscription_id', '=', subscriptionId)
    .executeTakeFirstOrThrow();

test("withdrawn takes the period's credits back once, reinstated (first or last) gives them back once", async () => {
  const period = await paidPeriod();
  const dispute = disputeOf(period);
  const withdrawn = dispute('charge.dispute.funds_withdrawn', 'needs_response', 1);
  await deliverAndFinish(withdrawn);
  await deliverAndFinish(sampleEvent(withdrawn.type, withdrawn.data.object, { created: withdrawn.created }));
  assert.equal((await quotaOf(file.database, period.accountId)).granted, 0);
  assert.deepEqual(await grantOf(period.subscriptionId), { revocation_target: 100, revoked_credits: 100 });
  await deliverAndFinish(dispute('charge.dispute.funds_reinstated', 'won', 2));
  await deliverAndFinish(dispute('charge.dispute.funds_reinstated', 'won', 2));
  assert.equal((await quotaOf(file.database, period.accountId)).granted, 100);
  assert.deepEqual(await grantOf(period.subscriptionId), { revocation_target: 0, revoked_credits: 0 });

  // Another period's dispute whose reinstatement arrives first: nothing is ever taken.
  const early = await paidPeriod();
  const reversed = disputeOf(early);
  await deliverAndFinish(reversed('charge.dispute.funds_reinstated', 'won', 2));
  await deliverAndFinish(reversed('charge.dispute.funds_withdrawn', 'needs_response', 1));
  assert.equal((await quotaOf(file.database, early.accountId)).granted, 100);
});

test('a refund after a lost dispute takes nothing twice, and never below zero', async () => {
  const period = await paidPeriod();
  const dispute = disputeOf(period);
  await deliverAndFinish(dispute('charge.dispute.funds_withdrawn', 'needs_response', 1));
  await deliverAndFinish(dispute('charge.dispute.closed', 'lost', 2));
  assert.equal((await quotaOf(file.database, period.accountId)).granted, 0);
  await deliverAndFinish(
    sampleEvent(
      'charge.refunded',
      refundedCharge({ paymentIntentId: period.paymentIntentId, amount: period.amount, currency: period.currency, amountRefunded: period.amount }),
    ),
  );
  assert.deepEqual(await quotaOf(file.database, period.accountId), { account_id: period.accountId, granted: 0, used: 0, remaining: 0 });
  assert.deepEqual(await grantOf(period.subscriptionId), { revocation_target: 100, revoked_credits: 100 });
});
