// An Event Stripe failed to generate is never delivered nor listed; Stripe's thin alert
// (v2.core.health.event_generation_failure.resolved) names its type and object instead. The worker
// fetches the alert's data and the object from (fake) Stripe and runs the object through the
// missed type's handlers, once: the alert again, or the real event should it arrive after all,
// changes nothing more.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generationFailureAlert, objectUrl, randomStripeId, type SampleEvent, type ThinNotification } from '../../src/stripe/sample-events.js';
import { GENERATION_FAILURE_TYPE } from '../../src/stripe/thin-events.js';
import { eventRow, finishedEvent, givenOrder, grantsOf, orderRow, paidEvent, quotaOf, retryingEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile();

/**
 * The alert for `missed`, as delivered; (fake) Stripe answers GET /v2/core/events/:id with its data
 * (`known: false`: it does not). The missed event itself is never added.
 */
function alertFor(
  missed: SampleEvent,
  { known = true, ...options }: { type?: string; url?: string; context?: string; known?: boolean } = {},
): ThinNotification {
  const alert = generationFailureAlert(missed, options);
  if (known) file.service.stripe.addThinEvent(alert.event);
  return alert.notification;
}

const fetchesOfObject = (missed: SampleEvent) =>
  file.service.stripe.requests.filter((r) => r.method === 'GET' && r.path === objectUrl(missed.data.object as { id: string; object: string }));
const fetchesOf = (missed: SampleEvent) => fetchesOfObject(missed).length;

/** An order whose Checkout Session (fake) Stripe holds, and the checkout.session.completed it failed to generate. */
async function missedCheckout(paymentStatus: 'paid' | 'unpaid' = 'paid') {
  const order = await givenOrder(file.database);
  const missed = paidEvent(order, { paymentStatus });
  file.service.stripe.addObject(missed.data.object);
  return { order, missed };
}

describe('a paid Checkout Session whose checkout.session.completed Stripe failed to generate', () => {
  test('the alert grants the order once; the alert again, a second alert, and the real event late grant nothing more', async () => {
    const { order, missed } = await missedCheckout();
    const alert = alertFor(missed);
    assert.equal((await file.service.deliver(alert)).status, 200);

    const row = await finishedEvent(file.database, alert.id);
    assert.deepEqual([row.status, row.type, row.last_error], ['processed', GENERATION_FAILURE_TYPE, null]);
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: alert.id, credits: order.credits }]);
    assert.equal((await orderRow(file.database, order.order_id)).status, 'paid');

    assert.equal((await file.service.deliver(alert)).status, 200);
    assert.equal((await eventRow(file.database, alert.id)).status, 'processed');

    const again = alertFor(missed);
    assert.equal((await file.service.deliver(again)).status, 200);
    const second = await finishedEvent(file.database, again.id);
    assert.deepEqual([second.status, second.duplicate_of], ['duplicate', alert.id]);

    file.service.stripe.addEvent({ ...missed });
    assert.equal((await file.service.deliver(missed)).status, 200);
    const real = await finishedEvent(file.database, missed.id);
    assert.deepEqual([real.status, real.duplicate_of], ['duplicate', alert.id]);

    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: alert.id, credits: order.credits }]);
    assert.equal((await quotaOf(file.database, order.account_id)).granted, order.credits);
  });

  test('Stripe answers 500 for the alert: it waits for its retry, then grants once', async () => {
    const { order, missed } = await missedCheckout();
    const alert = alertFor(missed);
    file.service.stripe.failNext(2); // the SDK's try and its one retry
    assert.equal((await file.service.deliver(alert)).status, 200);

    const waiting = await retryingEvent(file.database, alert.id);
    assert.match(waiting.last_error ?? '', /api_error|Simulated Stripe outage/);
    assert.equal((await finishedEvent(file.database, alert.id, { timeoutMs: 20_000 })).status, 'processed');
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: alert.id, credits: order.credits }]);
  });
});

describe('an alert for an event of a connected account', () => {
  test('the object is fetched in the account the alert names (impact.context), and the order granted once', async () => {
    const { order, missed } = await missedCheckout();
    const account = randomStripeId('acct');
    const alert = alertFor(missed, { context: account });
    assert.equal((await file.service.deliver(alert)).status, 200);

    assert.equal((await finishedEvent(file.database, alert.id)).status, 'processed');
    assert.deepEqual(
      fetchesOfObject(missed).map((r) => r.stripeContext),
      [account],
    );
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: alert.id, credits: order.credits }]);
  });
});

describe('what the alert does not grant', () => {
  test('an unpaid session: nothing granted, as checkout.session.completed of it would end', async () => {
    const { order, missed } = await missedCheckout('unpaid');
    const alert = alertFor(missed);
    assert.equal((await file.service.deliver(alert)).status, 200);

    const row = await finishedEvent(file.database, alert.id);
    assert.deepEqual([row.status, row.last_error], ['processed', null]);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
  });

  test('a missed type no module acts on: ignored naming the type, the object not fetched', async () => {
    const { order, missed } = await missedCheckout();
    const alert = alertFor(missed, { type: 'customer.created' });
    assert.equal((await file.service.deliver(alert)).status, 200);

    const row = await finishedEvent(file.database, alert.id);
    assert.deepEqual([row.status, row.last_error], ['ignored', 'no module handles customer.created, the type Stripe failed to generate']);
    assert.equal(fetchesOf(missed), 0);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });

  test('a related object Stripe answers 404 for: failed with the reason', async () => {
    const { order, missed } = await missedCheckout();
    const alert = alertFor(missed, { url: '/v1/checkout/sessions/cs_test_gone' });
    assert.equal((await file.service.deliver(alert)).status, 200);

    const row = await finishedEvent(file.database, alert.id);
    assert.equal(row.status, 'failed');
    assert.match(row.last_error ?? '', /^thin event: Stripe answered 404 for GET \/v1\/checkout\/sessions\/cs_test_gone/);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });

  for (const livemode of [true, undefined]) {
    test(`an alert whose fetched event is ${livemode ? 'live-mode' : 'without a livemode'}: failed, nothing else fetched`, async () => {
      const { order, missed } = await missedCheckout();
      const { event, notification } = generationFailureAlert(missed);
      file.service.stripe.addThinEvent({ ...event, livemode });
      assert.equal((await file.service.deliver(notification)).status, 200);

      const row = await finishedEvent(file.database, notification.id);
      assert.equal(row.status, 'failed');
      assert.match(row.last_error ?? '', new RegExp(`^livemode mismatch: event ${notification.id} is ${livemode ? 'live-mode' : 'without a livemode'}`));
      assert.equal(fetchesOf(missed), 0);
      assert.deepEqual(await grantsOf(file.database, order.order_id), []);
    });
  }

  test('a related object that is live-mode: failed, nothing granted', async () => {
    const { order, missed } = await missedCheckout();
    file.service.stripe.addObject({ ...missed.data.object, livemode: true });
    const alert = alertFor(missed);
    assert.equal((await file.service.deliver(alert)).status, 200);

    const row = await finishedEvent(file.database, alert.id);
    assert.equal(row.status, 'failed');
    assert.match(row.last_error ?? '', /^livemode mismatch: the object at ".*" is live-mode, this service is test-mode/);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });

  test('an alert Stripe answers 404 for: failed with the reason, nothing else fetched', async () => {
    const { order, missed } = await missedCheckout();
    const alert = alertFor(missed, { known: false });
    assert.equal((await file.service.deliver(alert)).status, 200);

    const row = await finishedEvent(file.database, alert.id);
    assert.equal(row.status, 'failed');
    assert.match(row.last_error ?? '', new RegExp(`^thin event: Stripe answered 404 for GET /v2/core/events/${alert.id}`));
    assert.equal(fetchesOf(missed), 0);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });
});
