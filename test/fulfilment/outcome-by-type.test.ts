// What the worker does with each kind of event: only a paid checkout session grants; delayed
// payments grant on async_payment_succeeded; telemetry and unhandled types are stored and
// finished without touching the ledger; repeating types are never collapsed (docs/design.md,
// invariant 4).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { subscriptionObject } from '../../src/modules/billing/sample-events.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';

import { finishedEvent, givenOrder, grantsOf, orderRow, paidEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile();

async function granted(accountId: string): Promise<unknown> {
  const reply = await file.service.call('GET', `/api/accounts/${accountId}/quota`);
  assert.equal(reply.status, 200);
  return reply.body.granted;
}

describe('a delayed payment method', () => {
  test('an unpaid checkout.session.completed is processed without a grant; async_payment_succeeded then grants once', async () => {
    const order = await givenOrder(file.database);
    const sessionId = `cs_test_${order.order_id}`;
    const completed = paidEvent(order, { sessionId, paymentStatus: 'unpaid' });
    await file.service.deliver(completed);

    assert.equal((await finishedEvent(file.database, completed.id)).status, 'processed');
    assert.equal((await orderRow(file.database, order.order_id)).status, 'pending');
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
    assert.equal(await granted(order.account_id), 0);

    const succeeded = paidEvent(order, { sessionId, type: 'checkout.session.async_payment_succeeded' });
    await file.service.deliver(succeeded);
    assert.equal((await finishedEvent(file.database, succeeded.id)).status, 'processed');
    const paid = await orderRow(file.database, order.order_id);
    assert.equal(paid.status, 'paid');
    assert.ok(paid.paid_at instanceof Date);
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: succeeded.id, credits: order.credits }]);
    assert.equal(await granted(order.account_id), order.credits);
  });
});

describe('events that do not grant', () => {
  test('an unhandled type is stored and ends ignored', async () => {
    const event = sampleEvent('customer.created', { id: randomStripeId('cus'), object: 'customer' });
    assert.equal((await file.service.deliver(event)).status, 200);
    const row = await finishedEvent(file.database, event.id);
    assert.equal(row.status, 'ignored');
    assert.ok(row.finished_at instanceof Date);
  });

  test('payment_intent.succeeded for an order is telemetry: processed, no grant, order still pending', async () => {
    const order = await givenOrder(file.database);
    // The PaymentIntent behind the order's checkout: same amount, currency and metadata.
    const intent = {
      ...exampleObject('payment_intent'),
      id: randomStripeId('pi'),
      amount: order.amount,
      amount_received: order.amount,
      currency: order.currency,
      status: 'succeeded',
      metadata: { order_id: order.order_id },
    };
    const event = sampleEvent('payment_intent.succeeded', intent);
    await file.service.deliver(event);

    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    assert.equal((await orderRow(file.database, order.order_id)).status, 'pending');
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
    assert.equal(await granted(order.account_id), 0);
  });
});

describe('a type that repeats for one object', () => {
  test('two customer.subscription.updated for one subscription are two rows, both finished, neither collapsed', async () => {
    const subscriptionId = randomStripeId('sub');
    // A subscription not started here: each event ends 'ignored', with the reason.
    const stranger = { subscriptionId: 'unused', stripeSubscriptionId: subscriptionId, amount: 1900, currency: 'chf' };
    const periodEnd = Math.floor(Date.now() / 1000) + 86_400;
    const events = ['active', 'past_due'].map((status) =>
      sampleEvent('customer.subscription.updated', subscriptionObject(stranger, { status, periodEnd, metadata: false })),
    );
    for (const event of events) assert.equal((await file.service.deliver(event)).status, 200);

    const rows = await Promise.all(events.map((e) => finishedEvent(file.database, e.id)));
    assert.deepEqual(
      rows.map((r) => ({ event_id: r.event_id, object_id: r.object_id, status: r.status, duplicate_of: r.duplicate_of })),
      events.map((e) => ({ event_id: e.id, object_id: subscriptionId, status: 'ignored', duplicate_of: null })),
    );
    assert.match(rows[0]!.last_error ?? '', /was not started by POST \/api\/subscriptions/);
    const stored = await file.database.db.selectFrom('stripe_events').select('event_id').where('object_id', '=', subscriptionId).execute();
    assert.equal(stored.length, 2);
  });
});
