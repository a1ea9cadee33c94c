// Events that overtake what they need, through the webhook and the real worker (a dispute
// before its payment, a paid subscription stuck 'pending'): each is parked without spending an
// attempt, however small MAX_ATTEMPTS is, runs as soon as what it waits for commits, and is
// applied once, whichever arrived first. The lock protocol that keeps a wake from being lost is
// raced in test/events/event-waits.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { PERIOD_SECONDS, periodEvents, subscriptionObject } from '../../src/modules/billing/sample-events.js';
import { WAIT_HOURS } from '../../src/events/event-waits.js';
import { disputeObject, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, paidEvent, quotaOf, waitingEvent } from '../support/factories.js';
import { notifyingServiceForFile, receivedWhere } from '../support/notification-receiver.js';
import { checkoutCompleted, subscribedThroughApi } from '../support/subscriptions.js';
import { waitFor } from '../support/wait-for.js';

// One attempt each: before waits were parked, every early event here ended after its first try.
const file = notifyingServiceForFile({ MAX_ATTEMPTS: '1' });

/** The app received `type` about the account, verified, exactly once (after the outbox's row is written once). */
async function toldOnce(type: string, accountId: string): Promise<void> {
  const [told] = await waitFor(
    `${type} for ${accountId}`,
    receivedWhere(file.receiver, (n) => n.type === type && n.data.account_id === accountId && n.verified),
  );
  assert.ok(told);
  assert.equal((await notificationsOf(type, accountId)).length, 1);
}

const notificationsOf = async (type: string, accountId: string) =>
  (await file.database.db.selectFrom('notifications').select('business_key').where('type', '=', type).where('account_id', '=', accountId).execute()).map(
    (n) => n.business_key,
  );

async function delivered(event: SampleEvent): Promise<SampleEvent> {
  assert.equal((await file.service.deliver(event)).status, 200);
  return event;
}

async function processed(event: SampleEvent): Promise<void> {
  const row = await finishedEvent(file.database, event.id);
  assert.equal(row.status, 'processed', `${event.type}: ${row.status}, ${row.last_error}`);
}

/**
 * A subscription whose first period is paid and granted (100 credits), the events of its renewal
 * (not delivered), and a dispute of the renewal's payment delivered before them.
 */
async function renewalDisputedFirst(): Promise<{
  subscription: Awaited<ReturnType<typeof subscribedThroughApi>>;
  renewal: SampleEvent[];
  withdrawn: SampleEvent;
}> {
  const subscription = await subscribedThroughApi(file);
  const start = Math.floor(Date.now() / 1000) - 120;
  const firstPeriod = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
  for (const event of firstPeriod) await delivered(event);
  for (const event of firstPeriod) await finishedEvent(file.database, event.id);
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);

  const renewal = periodEvents(subscription, { cycle: 2, lastAt: start + 60, periodEnd: start + 2 * PERIOD_SECONDS });
  const paymentIntentId = (renewal.find((e) => e.type === 'payment_intent.succeeded')!.data.object as { id: string }).id;
  const withdrawn = await delivered(
    sampleEvent(
      'charge.dispute.funds_withdrawn',
      disputeObject({ paymentIntentId, amount: subscription.amount, currency: subscription.currency, status: 'needs_response' }),
    ),
  );
  return { subscription, renewal, withdrawn };
}

test("a dispute delivered before its order's checkout.session.completed waits for it, then takes the credits back once, and tells the app once", async () => {
  const order = await givenOrder(file.database);
  const payment = paidEvent(order);
  const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
  const dispute = (type: string, status: string) =>
    sampleEvent(type, disputeObject({ paymentIntentId, amount: order.amount, currency: order.currency, status, disputeId: `dp_test_${order.order_id}` }));
  const created = await delivered(dispute('charge.dispute.created', 'needs_response'));
  const withdrawn = await delivered(dispute('charge.dispute.funds_withdrawn', 'needs_response'));
  for (const early of [created, withdrawn]) {
    const row = await waitingEvent(file.database, early.id);
    assert.deepEqual([row.attempts, row.waits_for], [0, [`payment_intent:${paymentIntentId}`]], `${early.type} waits, spending nothing`);
    assert.match(row.last_error ?? '', /no order paid by payment intent \S+ \(yet\): waiting for its payment's event/);
  }

  await delivered(payment);
  await processed(payment);
  await processed(created);
  await processed(withdrawn);
  assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 0, used: 0, remaining: 0 });
  assert.deepEqual(await notificationsOf('order.disputed', order.account_id), [`order.disputed:dp_test_${order.order_id}`]);
  await toldOnce('order.disputed', order.account_id);

  // Stripe resends both: nothing more is taken, nothing more is told.
  for (const again of [created, withdrawn]) await processed(await delivered(sampleEvent(again.type, again.data.object, { created: again.created })));
  assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
  assert.equal((await notificationsOf('order.disputed', order.account_id)).length, 1);
});

test("a dispute of a renewal delivered before that period's invoice.paid waits for it, then takes that period's credits back once", async () => {
  const { subscription, renewal, withdrawn } = await renewalDisputedFirst();
  assert.equal((await waitingEvent(file.database, withdrawn.id)).attempts, 0);

  for (const event of renewal) await delivered(event);
  await processed(withdrawn);
  // 100 for each period, the renewal's taken back.
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
  await toldOnce('subscription.period_disputed', subscription.accountId);
});

test("a renewal's dispute woken by its payment's link before the grant waits again, and the grant wakes it", async () => {
  const { subscription, renewal, withdrawn } = await renewalDisputedFirst();
  const first = await waitingEvent(file.database, withdrawn.id);

  // The link comes first and wakes the dispute, which finds no grant yet and waits again.
  await processed(await delivered(renewal.find((e) => e.type === 'invoice_payment.paid')!));
  await waitFor('the dispute to have looked again and waited', async () => {
    const again = await waitingEvent(file.database, withdrawn.id);
    return again.job_key !== first.job_key;
  });
  // The grant names no PaymentIntent on its invoice (today's API): it wakes the linked one.
  await processed(await delivered(renewal.find((e) => e.type === 'invoice.paid')!));
  await processed(withdrawn);
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
});

test("a subscription's first events before the checkout that links it wait for it, and the subscription is not left 'pending'", async () => {
  const subscription = await subscribedThroughApi(file);
  const start = Math.floor(Date.now() / 1000) - 60;
  const created = await delivered(
    sampleEvent('customer.subscription.created', subscriptionObject(subscription, { status: 'active', periodEnd: start + PERIOD_SECONDS }), { created: start }),
  );
  const row = await waitingEvent(file.database, created.id);
  assert.deepEqual([row.attempts, row.waits_for], [0, [`stripe_subscription:${subscription.stripeSubscriptionId}`]]);
  // Well past what the old retry schedule gave it (one attempt): still waiting, not dead.
  assert.equal((await file.service.call('GET', `/api/subscriptions/${subscription.subscriptionId}`)).body.status, 'pending');

  const link = await delivered(checkoutCompleted(subscription));
  await processed(link);
  await processed(created);
  const reply = await file.service.call('GET', `/api/subscriptions/${subscription.subscriptionId}`);
  assert.equal(reply.body.status, 'active');
  assert.equal(reply.body.stripe_subscription_id, subscription.stripeSubscriptionId);
});

test('an operator sees what a waiting event waits for and until when, listed as waiting, not as stuck', async () => {
  const order = await givenOrder(file.database);
  const payment = paidEvent(order);
  const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
  const withdrawn = await delivered(
    sampleEvent('charge.dispute.funds_withdrawn', disputeObject({ paymentIntentId, amount: order.amount, currency: order.currency, status: 'needs_response' })),
  );
  await waitingEvent(file.database, withdrawn.id);

  const detail = (await file.service.call('GET', `/admin/api/events/${withdrawn.id}`)).body;
  assert.deepEqual([detail.status, detail.attempts, detail.waits_for], ['processing', 0, [`payment_intent:${paymentIntentId}`]]);
  const hoursLeft = (Date.parse(detail.wait_until as string) - Date.now()) / 3_600_000;
  assert.ok(hoursLeft > WAIT_HOURS - 1 && hoursLeft <= WAIT_HOURS, `gives up in ${hoursLeft} h`);
  assert.match(detail.last_error as string, /no order paid by payment intent \S+ \(yet\): waiting for its payment's event/);
  const listed = async (status: string) =>
    ((await file.service.call('GET', `/admin/api/events?status=${status}&limit=500`)).body as unknown as Array<{ event_id: string }>).some(
      (e) => e.event_id === withdrawn.id,
    );
  // Parked a day ago, far past the stale threshold: old on purpose, not stuck.
  await file.database.db
    .updateTable('stripe_events')
    .set({ enqueued_at: sql`now() - interval '1 day'` })
    .where('event_id', '=', withdrawn.id)
    .execute();
  assert.deepEqual([await listed('waiting'), await listed('stuck')], [true, false]);

  await delivered(payment);
  await processed(withdrawn);
  const after = (await file.service.call('GET', `/admin/api/events/${withdrawn.id}`)).body;
  assert.deepEqual([after.status, after.waits_for, after.wait_until], ['processed', null, null]);
  assert.equal(await listed('waiting'), false);
});
