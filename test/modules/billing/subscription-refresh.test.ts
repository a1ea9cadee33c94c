// The tie-break of subscription state through the real worker: two different states stamped with
// the same second are resolved by fetching the subscription from Stripe (here the offline
// stand-in), and invoice.payment_failed fetches it too, since the status is changing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { invoiceObject, subscriptionObject } from '../../../src/modules/billing/sample-events.js';
import { sampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent } from '../../support/factories.js';
import { jobDone } from '../../support/jobs.js';
import { serviceForFile } from '../../support/service.js';
import { subscribedThroughApi } from '../../support/subscriptions.js';
import { waitFor } from '../../support/wait-for.js';

const file = serviceForFile();

const givenSubscription = () => subscribedThroughApi(file, { linked: true });
const stateOf = async (subscriptionId: string) => {
  const row = await file.database.db.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();
  return { status: row.status, cancelAtPeriodEnd: row.cancel_at_period_end };
};

for (const truthFirst of [false, true]) {
  test(`two states of the same second (${truthFirst ? "Stripe's arriving first" : 'the stale one first'}): the one Stripe holds now wins`, async () => {
    const subscription = await givenSubscription();
    const t = Math.floor(Date.now() / 1000) - 100;
    const periodEnd = t + 86_400;
    // Stripe's truth: cancelling at period end. The deliveries carry both states, stamped alike.
    file.service.stripe.addSubscription(subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd: true }));
    const truth = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd: true }), {
      created: t,
    });
    const stale = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd: false }), {
      created: t,
    });
    for (const event of truthFirst ? [truth, stale] : [stale, truth]) {
      await file.service.deliver(event);
      assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    }
    await waitFor('the subscription to be fetched from Stripe', () =>
      Promise.resolve(file.service.stripe.requests.some((r) => r.method === 'GET' && r.path === `/v1/subscriptions/${subscription.stripeSubscriptionId}`)),
    );
    await waitFor('the fetched state to be applied', async () => (await stateOf(subscription.subscriptionId)).cancelAtPeriodEnd);
    assert.deepEqual(await stateOf(subscription.subscriptionId), { status: 'active', cancelAtPeriodEnd: true });
  });
}

test('invoice.payment_failed fetches the subscription, whose status Stripe is changing', async () => {
  const subscription = await givenSubscription();
  const t = Math.floor(Date.now() / 1000) - 100;
  const active = sampleEvent('customer.subscription.created', subscriptionObject(subscription, { status: 'active', periodEnd: t + 86_400 }), { created: t });
  await file.service.deliver(active);
  await finishedEvent(file.database, active.id);
  file.service.stripe.addSubscription(subscriptionObject(subscription, { status: 'past_due', periodEnd: t + 86_400 }));

  const failed = sampleEvent('invoice.payment_failed', invoiceObject(subscription, { billingReason: 'subscription_cycle', status: 'open' }), {
    created: t + 10,
  });
  await file.service.deliver(failed);
  assert.equal((await finishedEvent(file.database, failed.id)).status, 'processed');
  await waitFor('the past_due status from Stripe', async () => (await stateOf(subscription.subscriptionId)).status === 'past_due');
});

test('a subscription Stripe answers in the other mode is not applied, and not fetched again', async () => {
  const subscription = await givenSubscription();
  const t = Math.floor(Date.now() / 1000) - 100;
  const periodEnd = t + 86_400;
  file.service.stripe.addSubscription({ ...subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd: true }), livemode: true });
  for (const cancelAtPeriodEnd of [false, true]) {
    const event = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd }), {
      created: t,
    });
    await file.service.deliver(event);
    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
  }
  const path = `/v1/subscriptions/${subscription.stripeSubscriptionId}`;
  await waitFor(
    'the fetch, and its job to end',
    async () =>
      file.service.stripe.requests.some((r) => r.method === 'GET' && r.path === path) &&
      (await jobDone(file.database.db, `billing_refresh_subscription:${subscription.subscriptionId}`)),
  );
  // The state held before the tie stays: the live-mode answer settles nothing here.
  assert.deepEqual(await stateOf(subscription.subscriptionId), { status: 'active', cancelAtPeriodEnd: false });
  assert.equal(file.service.stripe.requests.filter((r) => r.method === 'GET' && r.path === path).length, 1);
});
