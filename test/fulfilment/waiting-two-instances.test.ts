// Disputes before their payments, on two instances of the service against one database, each
// with its worker: 8 orders and 4 plans' first periods whose disputes
// (created and funds_withdrawn) are delivered first, every event twice and as a second Event
// object, shuffled across both instances; then their payments' events the same way. Every
// dispute waits, nothing ends failed, and each purchase ends with its credits taken back once and
// its app told once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PERIOD_SECONDS, periodEvents } from '../../src/modules/billing/sample-events.js';
import { disputeObject, randomStripeId, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, paidEvent, quotaOf, waitingEvent } from '../support/factories.js';
import { notifyingTo, receivedWhere, startNotificationReceiver, type NotificationReceiver } from '../support/notification-receiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { subscribedThroughApi } from '../support/subscriptions.js';
import { waitFor } from '../support/wait-for.js';

let database: TestDatabase;
let receiver: NotificationReceiver;
let instances: TestService[];

before(async () => {
  database = await createTestDatabase();
  receiver = await startNotificationReceiver();
  const env = notifyingTo(receiver);
  const first = await startTestService(database, { env });
  instances = [first, await startTestService(database, { stripe: first.stripe, env })];
});
after(async () => {
  for (const instance of instances ?? []) await instance.close();
  await receiver?.close();
  await database?.close();
});

/** Each event twice (Stripe's retry) and a second Event object for it, shuffled. */
function asStripeSendsThem(events: readonly SampleEvent[]): SampleEvent[] {
  const all = events.flatMap((event) => [event, event, sampleEvent(event.type, event.data.object, { created: event.created })]);
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

/** Delivered at once, each to one instance or the other; every delivery answered 200. */
async function deliverAcross(events: readonly SampleEvent[]): Promise<void> {
  const replies = await Promise.all(events.map((event, i) => instances[i % 2]!.deliver(event)));
  assert.deepEqual(
    replies.map((reply) => reply.status),
    events.map(() => 200),
  );
}

function disputeOf(paymentIntentId: string, amount: number, currency: string): SampleEvent[] {
  const ids = { disputeId: randomStripeId('dp'), chargeId: randomStripeId('ch'), paymentIntentId, amount, currency, status: 'needs_response' };
  return [sampleEvent('charge.dispute.created', disputeObject(ids)), sampleEvent('charge.dispute.funds_withdrawn', disputeObject(ids))];
}

test('8 orders and 4 plans disputed before their payments, on two instances: each loses its credits once and its app is told once', async (t) => {
  const orders = await Promise.all(Array.from({ length: 8 }, () => givenOrder(database)));
  const payments = orders.map((order) => paidEvent(order));
  const subscriptions = await Promise.all(Array.from({ length: 4 }, () => subscribedThroughApi({ service: instances[0]!, database })));
  const start = Math.floor(Date.now() / 1000) - 120;
  const periods = subscriptions.map((subscription) => periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS }));
  const intentOf = (events: readonly SampleEvent[]) => (events.find((e) => e.type === 'payment_intent.succeeded')!.data.object as { id: string }).id;
  const disputes = [
    ...orders.flatMap((order, i) => disputeOf((payments[i]!.data.object as { payment_intent: string }).payment_intent, order.amount, order.currency)),
    ...subscriptions.flatMap((subscription, i) => disputeOf(intentOf(periods[i]!), subscription.amount, subscription.currency)),
  ];

  const early = asStripeSendsThem(disputes);
  await deliverAcross(early);
  // Each is parked, not failing: a wait spends no attempt (MAX_ATTEMPTS=1 in waiting-events.test.ts
  // proves it); an attempt that a real, transient failure cost on the way (a deadlock between the
  // two instances' transactions, retried) is reported, not failed.
  for (const event of early) {
    const row = await waitingEvent(database, event.id);
    if (row.attempts > 0) t.diagnostic(`${event.type} waiting after ${row.attempts} attempt(s): ${row.last_error}`);
  }

  const late = asStripeSendsThem([...payments, ...periods.flat()]);
  await deliverAcross(late);
  // A dispute is applied, never dropped; nothing fails (a period's invoice.created is ignored: no module acts on it).
  for (const event of [...early, ...late]) {
    const row = await finishedEvent(database, event.id, { timeoutMs: 30_000 });
    const expected = early.includes(event) ? ['processed', 'duplicate'] : ['processed', 'duplicate', 'ignored'];
    assert.ok(expected.includes(row.status), `${event.type} ${event.id}: ${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
    if (row.attempts > 0) t.diagnostic(`${event.type}: ${row.attempts} attempt(s), ${row.last_error}`);
  }

  const purchases = [
    ...orders.map((order) => ({ accountId: order.account_id, granted: 40, disputed: 'order.disputed' })),
    ...subscriptions.map((subscription) => ({ accountId: subscription.accountId, granted: 100, disputed: 'subscription.period_disputed' })),
  ];
  for (const { accountId, granted, disputed } of purchases) {
    assert.deepEqual(await quotaOf(database, accountId), { account_id: accountId, granted: 0, used: 0, remaining: 0 });
    const taken = await database.db.selectFrom('disputes').select('credits_taken').where('account_id', '=', accountId).execute();
    assert.deepEqual(taken, [{ credits_taken: granted }], `${accountId}: one dispute, its credits taken once`);
    const told = await database.db.selectFrom('notifications').select('type').where('account_id', '=', accountId).where('type', '=', disputed).execute();
    assert.equal(told.length, 1, `${accountId}: ${disputed} once`);
    await waitFor(
      `${disputed} received for ${accountId}`,
      receivedWhere(receiver, (n) => n.type === disputed && n.data.account_id === accountId && n.verified),
    );
    assert.equal(receiver.unique().filter((n) => n.type === disputed && n.data.account_id === accountId).length, 1);
  }
  for (const subscription of subscriptions) {
    const reply = await instances[1]!.call('GET', `/api/subscriptions/${subscription.subscriptionId}`);
    assert.equal(reply.body.status, 'active', `${subscription.subscriptionId} is not left pending`);
  }
});
