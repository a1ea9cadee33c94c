// Logs page no one for what the service handles itself. In the quick start's subscription flow an
// event that waits for the link its Checkout Session makes is told once, at info, without a stack;
// a retry is one warning per attempt, and graphile-worker's own `Failed task … Batch failures` line
// does not repeat it at error; each delivered notification is one info line. Error (with a stack)
// is left for what an operator must act on: a dead letter, an unexpected exception.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { periodEvents, PERIOD_SECONDS } from '../src/modules/billing/sample-events.js';
import { signDelivery, thinNotification } from '../src/stripe/sample-events.js';
import { spawnService, type ChildService } from './support/child-service.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { finishedEvent, givenOrder, paidEvent, retryingEvent, waitingEvent } from './support/factories.js';
import { notifyingTo, startNotificationReceiver, type NotificationReceiver } from './support/notification-receiver.js';
import { WEBHOOK_SECRET } from './support/service.js';
import { jobOf } from './support/jobs.js';
import { givenSubscription } from './support/subscriptions.js';
import { waitFor } from './support/wait-for.js';

const ERROR = 50;
const WARN = 40;
const INFO = 30;

let database: TestDatabase;
let receiver: NotificationReceiver;
let child: ChildService;

before(async () => {
  database = await createTestDatabase();
  receiver = await startNotificationReceiver();
  // STRIPE_API_BASE is a closed port (support/child-service.ts): a thin event's fetch fails, and retries.
  child = await spawnService(database.url, notifyingTo(receiver, { SWEEP_CRON: '0 0 1 1 *' }));
});
after(async () => {
  child.process.kill('SIGKILL');
  await receiver.close();
  await database.close();
});

const deliver = async (event: unknown) => {
  const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
  assert.equal((await fetch(`${child.url}/webhooks/stripe`, { method: 'POST', body, headers })).status, 200);
};
const linesAbout = (eventId: string) => child.logs.filter((l) => l.eventId === eventId);

test('a subscription’s events before its checkout wait quietly; each notification delivered is one info line', async () => {
  const subscription = await givenSubscription(database);
  const now = Math.floor(Date.now() / 1000);
  const events = periodEvents(subscription, { cycle: 1, lastAt: now, periodEnd: now + PERIOD_SECONDS });
  const checkout = events.find((e) => e.type === 'checkout.session.completed')!;
  const invoicePaid = events.find((e) => e.type === 'invoice.paid')!;
  // Everything but the checkout first, as a shuffled delivery may bring them: the invoice must wait.
  for (const event of events) if (event !== checkout) await deliver(event);
  await waitingEvent(database, invoicePaid.id);
  await deliver(checkout);
  for (const event of events) await finishedEvent(database, event.id, { timeoutMs: 20_000 });
  const notified = await waitFor('the period paid and the subscription’s state, delivered', () => {
    const delivered = child.logs.filter((l) => l.msg === 'notification delivered');
    return Promise.resolve(delivered.length >= 2 ? delivered : undefined);
  });

  const waits = linesAbout(invoicePaid.id).filter((l) => l.msg === 'event waits for what it needs; it runs again when that arrives');
  assert.equal(waits.length, 1, 'told once');
  assert.equal(waits[0]!.level, INFO);
  assert.equal(waits[0]!.err, undefined, 'no error, no stack');
  assert.deepEqual(
    child.logs.filter((l) => (l.level as number) >= WARN),
    [],
    'nothing at warn or above',
  );

  assert.deepEqual(new Set(notified.map((l) => l.type)), new Set(['subscription.period_paid', 'subscription.updated']));
  for (const line of notified) {
    assert.equal(line.level, INFO);
    assert.equal(line.endpoint, receiver.url);
    assert.equal(line.statusCode, 204);
    assert.match(String(line.notificationId), /^msg_/);
    assert.equal(typeof line.durationMs, 'number');
  }
});

test('a retry is one warning per attempt, never graphile-worker’s Failed task at error', async () => {
  const order = await givenOrder(database);
  const thin = thinNotification(paidEvent(order));
  await deliver(thin);
  await retryingEvent(database, thin.id, { timeoutMs: 20_000 });
  // graphile-worker logs its failure line just before it records the error on the job.
  await waitFor('graphile-worker’s record of the failed attempt', async () => (await jobOf(database.db, thin.id))?.last_error);

  const about = linesAbout(thin.id);
  assert.ok(
    about.some((l) => l.level === WARN && l.msg === 'event handler failed, will retry'),
    JSON.stringify(about),
  );
  assert.deepEqual(
    child.logs.filter((l) => (l.level as number) >= ERROR).map((l) => l.msg),
    [],
  );
});
