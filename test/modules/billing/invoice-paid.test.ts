// Subscription fulfilment through the real service and worker: invoice.paid grants the plan's
// credits once per invoice, whatever order a period's events arrive in and however often; every
// other type only links ids or keeps the subscription's state; renewals grant again; invoices
// that must not grant end 'ignored' with the reason.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { invoiceObject, PERIOD_SECONDS, periodEvents } from '../../../src/modules/billing/sample-events.js';
import { exampleObject, randomStripeId, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent, quotaOf } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';
import { subscribedThroughApi } from '../../support/subscriptions.js';

const file = serviceForFile();

/** Started through POST /api/subscriptions; its period's events (periodEvents) include the checkout that links it. */
const givenSubscription = (options: { linked?: boolean } = {}) => subscribedThroughApi(file, options);

/** A reproducible shuffle: the same seed, the same order. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function deliverAll(events: readonly SampleEvent[]): Promise<Map<string, string>> {
  for (const event of events) assert.equal((await file.service.deliver(event)).status, 200, event.type);
  const statuses = new Map<string, string>();
  for (const event of events) statuses.set(event.type, (await finishedEvent(file.database, event.id)).status);
  return statuses;
}

const subscriptionRow = (subscriptionId: string) =>
  file.database.db.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();

describe('a first period', () => {
  for (const [name, order] of [
    ["in Stripe's order", (events: SampleEvent[]) => events],
    ['in reverse', (events: SampleEvent[]) => [...events].reverse()],
    ['shuffled (seed 7)', (events: SampleEvent[]) => shuffled(events, 7)],
    ['shuffled (seed 2026)', (events: SampleEvent[]) => shuffled(events, 2026)],
  ] as const) {
    test(`${name}: grants the plan's credits once and leaves the subscription active with its period`, async () => {
      const subscription = await givenSubscription();
      const start = Math.floor(Date.now() / 1000) - 60;
      const events = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
      const statuses = await deliverAll(order(events));

      assert.deepEqual(await quotaOf(file.database, subscription.accountId), { account_id: subscription.accountId, granted: 100, used: 0, remaining: 100 });
      assert.equal(statuses.get('invoice.paid'), 'processed');
      for (const type of ['invoice.payment_succeeded', 'charge.succeeded', 'payment_intent.succeeded', 'checkout.session.completed', 'invoice_payment.paid']) {
        assert.equal(statuses.get(type), 'processed', type);
      }
      const row = await subscriptionRow(subscription.subscriptionId);
      assert.deepEqual(
        [row.status, row.stripe_subscription_id, row.current_period_end?.getTime(), row.cancel_at_period_end],
        ['active', subscription.stripeSubscriptionId, (start + PERIOD_SECONDS) * 1000, false],
      );
      const grants = await file.database.db.selectFrom('invoice_grants').selectAll().where('subscription_id', '=', subscription.subscriptionId).execute();
      assert.equal(grants.length, 1);
      assert.deepEqual([grants[0]!.credits, grants[0]!.amount_paid, grants[0]!.billing_reason], [100, 1900, 'subscription_create']);
    });
  }
});

test('every delivery again, a second Event object for the same invoice, and a renewal: one grant per invoice', async () => {
  const subscription = await givenSubscription();
  const start = Math.floor(Date.now() / 1000) - 60;
  const first = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
  await deliverAll(first);
  // Stripe retries every one of them.
  for (const event of first) assert.deepEqual((await file.service.deliver(event)).body, { received: true, duplicate: true });
  // A second Event object for the paid invoice (Stripe documents that this happens).
  const paid = first.find((e) => e.type === 'invoice.paid')!;
  const again = sampleEvent('invoice.paid', paid.data.object, { created: paid.created });
  await file.service.deliver(again);
  const twin = await finishedEvent(file.database, again.id);
  assert.deepEqual([twin.status, twin.duplicate_of], ['duplicate', paid.id]);
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
  // Ops replay the event that granted: the same outcome again, not a duplicate of itself.
  assert.equal((await file.service.call('POST', `/admin/api/events/${paid.id}/replay`)).status, 202);
  const replayed = await finishedEvent(file.database, paid.id);
  assert.deepEqual([replayed.status, replayed.duplicate_of], ['processed', null]);
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);

  // The next period, shuffled: a second grant, for the new invoice.
  await deliverAll(shuffled(periodEvents(subscription, { cycle: 2, lastAt: start + 30, periodEnd: start + 2 * PERIOD_SECONDS }), 11));
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 200);
  const row = await subscriptionRow(subscription.subscriptionId);
  assert.equal(row.current_period_end?.getTime(), (start + 2 * PERIOD_SECONDS) * 1000);
});

test("a renewal paid from the customer's credit balance grants: its period is paid, though no money moved", async () => {
  const subscription = await givenSubscription();
  const start = Math.floor(Date.now() / 1000) - 60;
  await deliverAll(periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS }));
  // A downgrade's proration or a goodwill credit left a balance that covers the whole renewal.
  const renewal = invoiceObject(subscription, { billingReason: 'subscription_cycle', status: 'paid', fromBalance: 1900 });
  assert.deepEqual([renewal.total, renewal.amount_paid], [1900, 0]);
  const event = sampleEvent('invoice.paid', renewal);
  await file.service.deliver(event);
  assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
  assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 200);
});

describe('invoices that do not grant', () => {
  test("a proration, a manual invoice and an invoice for nothing end 'ignored' with the reason", async () => {
    const subscription = await givenSubscription();
    const start = Math.floor(Date.now() / 1000) - 60;
    await deliverAll(periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS }));
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [invoiceObject(subscription, { billingReason: 'subscription_update', status: 'paid', total: 350 }), /billing_reason subscription_update does not grant/],
      [invoiceObject(subscription, { billingReason: 'manual', status: 'paid' }), /billing_reason manual does not grant/],
      [
        invoiceObject(subscription, { billingReason: 'subscription_cycle', status: 'paid', total: 0 }),
        /is for nothing \(a trial, a 100 % discount\): credits come with paid periods/,
      ],
    ];
    for (const [invoice, reason] of cases) {
      const event = sampleEvent('invoice.paid', invoice);
      await file.service.deliver(event);
      const row = await finishedEvent(file.database, event.id);
      assert.equal(row.status, 'ignored');
      assert.match(row.last_error ?? '', reason);
    }
    assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
  });

  test('an invoice in another currency than the plan fails visibly and grants nothing', async () => {
    const subscription = await givenSubscription({ linked: true });
    const event = sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid', currency: 'eur' }));
    await file.service.deliver(event);
    const row = await finishedEvent(file.database, event.id);
    assert.equal(row.status, 'failed');
    assert.match(row.last_error ?? '', /currency mismatch/);
    assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 0);
  });

  test("an invoice that is not a subscription's is ignored", async () => {
    const event = sampleEvent('invoice.paid', {
      ...invoiceObject({ subscriptionId: 'x', stripeSubscriptionId: 'sub_x', amount: 100, currency: 'chf' }, { billingReason: 'manual', status: 'paid' }),
      parent: null,
    });
    await file.service.deliver(event);
    const row = await finishedEvent(file.database, event.id);
    assert.deepEqual(
      [row.status, row.last_error],
      [
        'ignored',
        `invoice ${(event.data.object as { id: string }).id} is not a subscription invoice (a one-off invoice): not started by POST /api/subscriptions`,
      ],
    );
  });
});

describe('an endpoint on an API version before 2025-03-31', () => {
  /**
   * A period's events as such an endpoint renders them: an invoice names its subscription and
   * PaymentIntent at its top level, a subscription holds its own period, and there is no
   * invoice_payment.paid (src/modules/billing/stripe-schemas.ts).
   */
  const paymentIntentOf = (events: readonly SampleEvent[]) =>
    (events.find((event) => event.type === 'payment_intent.succeeded')!.data.object as { id: string }).id;

  function olderShapes(events: readonly SampleEvent[]): SampleEvent[] {
    const paymentIntentId = paymentIntentOf(events);
    return events
      .filter((event) => event.type !== 'invoice_payment.paid')
      .map((event) => {
        const object = event.data.object;
        let older = object;
        // A field left undefined is absent from the body, as it is in the older shape.
        if (object.object === 'invoice') {
          const { subscription_details: details } = (object as { parent: { subscription_details: { subscription: string; metadata: unknown } } }).parent;
          older = {
            ...object,
            parent: undefined,
            payments: undefined,
            subscription: details.subscription,
            subscription_details: { metadata: details.metadata },
            payment_intent: object.status === 'paid' ? paymentIntentId : null,
          };
        } else if (object.object === 'subscription') {
          const items = object.items as { data: Array<Record<string, unknown>> };
          older = {
            ...object,
            current_period_end: items.data[0]!.current_period_end,
            items: { ...items, data: items.data.map((item) => ({ ...item, current_period_end: undefined, current_period_start: undefined })) },
          };
        }
        return { ...event, api_version: '2024-06-20', data: { object: older } };
      });
  }

  test('a first period grants once, keeps the period, and a refund of its payment takes the credits back', async () => {
    const subscription = await givenSubscription();
    const start = Math.floor(Date.now() / 1000) - 60;
    const events = olderShapes(periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS }));
    const statuses = await deliverAll(shuffled(events, 11));

    assert.equal(statuses.get('invoice.paid'), 'processed');
    assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
    const row = await subscriptionRow(subscription.subscriptionId);
    assert.deepEqual(
      [row.status, row.stripe_subscription_id, row.current_period_end?.getTime()],
      ['active', subscription.stripeSubscriptionId, (start + PERIOD_SECONDS) * 1000],
    );

    const refund = sampleEvent(
      'charge.refunded',
      {
        ...exampleObject('charge'),
        id: randomStripeId('ch'),
        amount: 1900,
        currency: 'chf',
        payment_intent: paymentIntentOf(events),
        amount_refunded: 1900,
        refunded: true,
      },
      { api_version: '2024-06-20' },
    );
    assert.equal((await deliverAll([refund])).get('charge.refunded'), 'processed');
    assert.deepEqual(await quotaOf(file.database, subscription.accountId), { account_id: subscription.accountId, granted: 0, used: 0, remaining: 0 });
    const grant = await file.database.db
      .selectFrom('invoice_grants')
      .select(['refunded_amount', 'revoked_credits'])
      .where('subscription_id', '=', subscription.subscriptionId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(grant, { refunded_amount: 1900, revoked_credits: 100 });
  });
});
