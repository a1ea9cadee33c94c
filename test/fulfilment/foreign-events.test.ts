// One Stripe account also carries sales this service never started (Payment Links, Dashboard
// invoices, other apps, `stripe trigger`). Their events end 'ignored' with the reason on the
// worker's first run, never waiting out the attempt budget; events of ours that overtake their link
// still wait, and are fulfilled once it arrives. Everything runs through the webhook and the real
// worker, with every module, as production does.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { invoiceObject } from '../../src/modules/billing/sample-events.js';
import { chargeOwnership } from '../../src/modules/ledger/index.js';
import { checkoutSession, exampleObject, randomStripeId, refundedCharge, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, newAccountId, orderRow, paidEvent, quotaOf, waitingEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';
import { checkoutCompleted, subscribedThroughApi } from '../support/subscriptions.js';

// graphile-worker retries after e^1 ≈ 2.7 s, found by a poll every 2 s (src/worker/runners.ts).
const RETRY_TIMEOUT_MS = 20_000;

const file = serviceForFile();

/** Delivers the event and returns its row once the worker has finished it on its first run: no failed attempt, nothing waited for. */
async function ignoredAtOnce(event: SampleEvent, reason: RegExp) {
  assert.equal((await file.service.deliver(event)).status, 200);
  const row = await finishedEvent(file.database, event.id);
  // attempts counts the attempts that failed or waited: 0 is the first run's outcome.
  assert.deepEqual([row.status, row.attempts], ['ignored', 0], `${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
  assert.match(row.last_error ?? '', reason);
  return row;
}

const foreignCharge = (overrides: Record<string, unknown> = {}) => ({
  ...refundedCharge({ paymentIntentId: randomStripeId('pi'), amount: 2500, currency: 'usd', amountRefunded: 2500 }),
  ...overrides,
});

describe("another sale's event ends 'ignored' at once, with the reason", () => {
  test('a Payment Link checkout: paid, no metadata, no order opened it', async () => {
    const session = {
      ...checkoutSession({ orderId: 'unused', amount: 2500, currency: 'usd' }),
      metadata: {},
      client_reference_id: null,
      payment_link: randomStripeId('plink'),
    };
    await ignoredAtOnce(
      sampleEvent('checkout.session.completed', session),
      /has no metadata\.order_id and no order opened it: not started by POST \/api\/checkout/,
    );
  });

  test('a one-off Dashboard invoice, paid: no subscription', async () => {
    const invoice = {
      ...exampleObject('invoice'),
      id: randomStripeId('in'),
      status: 'paid',
      billing_reason: 'manual',
      amount_paid: 1000,
      parent: null,
      subscription: null,
    };
    await ignoredAtOnce(sampleEvent('invoice.paid', invoice), /is not a subscription invoice \(a one-off invoice\)/);
  });

  test("an invoice of another app's subscription: its metadata names none of ours, and nothing links its subscription", async () => {
    const stranger = { subscriptionId: 'unused', stripeSubscriptionId: randomStripeId('sub'), amount: 1900, currency: 'chf' };
    const invoice = invoiceObject(stranger, { billingReason: 'subscription_cycle', status: 'paid', metadata: false });
    const row = await ignoredAtOnce(sampleEvent('invoice.paid', invoice), /no subscription of ours is linked to it and its subscription metadata names none/);
    assert.ok(row.last_error?.includes(stranger.stripeSubscriptionId));
  });

  test("a refund of another sale's PaymentIntent: both modules say why it is not theirs", async () => {
    const charge = foreignCharge();
    const row = await ignoredAtOnce(
      sampleEvent('charge.refunded', charge),
      /^no paid order for payment intent pi_\S+: .*not started by this service; no granted invoice paid by payment intent pi_\S+: .*not started by this service$/,
    );
    assert.ok(row.last_error?.includes(charge.id as string));
  });

  test('a refund of a charge without a PaymentIntent (not made through Checkout)', async () => {
    await ignoredAtOnce(
      sampleEvent('charge.refunded', foreignCharge({ payment_intent: null })),
      /^charge ch_\S+: charge ch_\S+ has no PaymentIntent: not a payment of ours; charge ch_\S+: charge ch_\S+ has no PaymentIntent/,
    );
  });

  test('a refund on an API version before 2025-03-31 of a charge that names no invoice', async () => {
    await ignoredAtOnce(
      sampleEvent('charge.refunded', foreignCharge({ invoice: null, customer: randomStripeId('cus') }), { api_version: '2024-06-20' }),
      /paid no invoice: not started by this service/,
    );
  });
});

describe('an event of ours that overtakes its link waits for it', () => {
  test("a refund whose charge names our order waits for the order's payment, then takes the credits back", async () => {
    const order = await givenOrder(file.database);
    const payment = paidEvent(order);
    const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
    const refund = sampleEvent(
      'charge.refunded',
      refundedCharge({ paymentIntentId, amount: order.amount, currency: order.currency, amountRefunded: order.amount, orderId: order.order_id }),
    );
    assert.equal((await file.service.deliver(refund)).status, 200);
    assert.match(
      (await waitingEvent(file.database, refund.id)).last_error ?? '',
      new RegExp(`names order "${order.order_id}" in its metadata, but ${order.order_id} is not paid`),
    );

    assert.equal((await file.service.deliver(payment)).status, 200);
    assert.equal((await finishedEvent(file.database, refund.id, { timeoutMs: RETRY_TIMEOUT_MS })).status, 'processed');
    assert.equal((await orderRow(file.database, order.order_id)).status, 'refunded');
  });

  test("a refund of a customer's charge that no link names yet may pay an invoice of ours: it waits", async () => {
    const refund = sampleEvent('charge.refunded', foreignCharge({ customer: randomStripeId('cus') }));
    assert.equal((await file.service.deliver(refund)).status, 200);
    assert.match((await waitingEvent(file.database, refund.id)).last_error ?? '', /may pay an invoice of a subscription of ours/);
  });

  test('an invoice of our subscription before the checkout that links it waits, then grants', async () => {
    const subscription = await subscribedThroughApi(file);
    const paid = sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid' }));
    assert.equal((await file.service.deliver(paid)).status, 200);
    assert.match((await waitingEvent(file.database, paid.id)).last_error ?? '', /was never linked to it: waiting/);

    assert.equal((await file.service.deliver(checkoutCompleted(subscription))).status, 200);
    assert.equal((await finishedEvent(file.database, paid.id, { timeoutMs: RETRY_TIMEOUT_MS })).status, 'processed');
    assert.equal((await quotaOf(file.database, subscription.accountId)).granted, 100);
  });

  test('a refund naming an order we do not have fails at once: it names something of ours that is wrong', async () => {
    const refund = sampleEvent('charge.refunded', foreignCharge({ metadata: { order_id: 'ord_nobody' } }));
    assert.equal((await file.service.deliver(refund)).status, 200);
    const row = await finishedEvent(file.database, refund.id);
    assert.deepEqual([row.status, row.attempts], ['failed', 1]);
    assert.match(row.last_error ?? '', /unknown order "ord_nobody" in the metadata of charge ch_/);
  });
});

describe('a payload that does not parse', () => {
  test('fails at once, its reason naming the field path, in either module', async () => {
    for (const [type, object, path] of [
      ['charge.refunded', foreignCharge({ amount_refunded: null }), 'data.object.amount_refunded'],
      ['invoice.paid', { ...exampleObject('invoice'), id: randomStripeId('in'), currency: null }, 'data.object.currency'],
    ] as const) {
      const event = sampleEvent(type, object);
      assert.equal((await file.service.deliver(event)).status, 200);
      const row = await finishedEvent(file.database, event.id);
      assert.deepEqual([row.status, row.attempts], ['failed', 1]);
      assert.match(row.last_error ?? '', new RegExp(`^not the ${type} object expected: "${path}" .*expected (number|string), received null`));
    }
  });
});

describe('chargeOwnership, the one answer to "whose charge is it"', () => {
  const base = { id: 'ch_1', payment_intent: 'pi_1' };
  test('answers from what the charge carries', () => {
    assert.equal(chargeOwnership({ ...base, metadata: { order_id: 'ord_1' } }).verdict, 'ours');
    assert.equal(chargeOwnership({ ...base, metadata: {}, payment_intent_metadata: { subscription_id: 'subscr_1' } }).verdict, 'ours');
    assert.equal(chargeOwnership({ ...base, payment_intent: null, metadata: {} }).verdict, 'not_ours');
    assert.equal(chargeOwnership({ ...base, metadata: {}, customer: null }).verdict, 'not_ours');
    assert.equal(chargeOwnership({ ...base, metadata: {}, invoice: null, customer: 'cus_1' }).verdict, 'not_ours');
    assert.equal(chargeOwnership({ ...base, metadata: {}, invoice: 'in_1' }).verdict, 'cannot_tell');
    assert.equal(chargeOwnership({ ...base, metadata: {}, customer: 'cus_1' }).verdict, 'cannot_tell');
    // A dispute carries its charge's ids only: what it was not told of, it cannot rule out.
    assert.equal(chargeOwnership(base).verdict, 'cannot_tell');
  });
});

describe('our checkouts make our objects recognisable', () => {
  test("a package checkout sends the order's id and account in payment_intent_data.metadata, which the stand-in accepts", async () => {
    const accountId = newAccountId();
    const reply = await file.service.call('POST', '/api/checkout', { body: { package_id: 'starter', account_id: accountId } });
    assert.equal(reply.status, 201);
    const create = file.service.stripe.requests.find((r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === reply.body.order_id);
    assert.deepEqual(create?.params.payment_intent_data, { metadata: { order_id: reply.body.order_id, account_id: accountId } });
  });

  test("a subscription checkout sends our subscription's id in subscription_data.metadata, which Stripe copies to its invoices", async () => {
    const subscription = await subscribedThroughApi(file);
    const create = file.service.stripe.requests.find((r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === subscription.subscriptionId);
    assert.deepEqual(create?.params.subscription_data, { metadata: { subscription_id: subscription.subscriptionId } });
    assert.equal(create?.params.payment_intent_data, undefined, 'Stripe refuses payment_intent_data in subscription mode');
  });
});
