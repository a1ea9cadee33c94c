import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import Stripe from 'stripe';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';

function checkoutParams(orderId: string, unitAmount = 1500): Stripe.Checkout.SessionCreateParams {
  return {
    mode: 'payment',
    line_items: [
      { quantity: 2, price_data: { currency: 'usd', unit_amount: unitAmount, product_data: { name: 'T-shirt' } } },
      { quantity: 1, price_data: { currency: 'usd', unit_amount: 500, product_data: { name: 'Shipping' } } },
    ],
    metadata: { order_id: orderId },
    client_reference_id: orderId,
    customer_email: 'buyer@example.test',
    success_url: 'https://shop.example.test/success',
    cancel_url: 'https://shop.example.test/cancel',
  };
}

void describe('offline Stripe driven by the real stripe SDK', () => {
  let offline: OfflineStripe;
  let stripe: Stripe;

  beforeEach(async () => {
    offline = await startOfflineStripe();
    stripe = new Stripe('sk_test_offline', { host: '127.0.0.1', port: offline.port, protocol: 'http', maxNetworkRetries: 2 });
  });
  afterEach(() => offline.close());

  void it('creates a Checkout Session shaped like Stripe’s and parses bracket-encoded params', async () => {
    const session = await stripe.checkout.sessions.create(checkoutParams('order_1'), { idempotencyKey: 'key-create' });

    assert.match(session.id, /^cs_test_[A-Za-z0-9]+$/);
    assert.equal(session.object, 'checkout.session');
    assert.equal(session.amount_total, 2 * 1500 + 500);
    assert.equal(session.currency, 'usd');
    assert.deepEqual(session.metadata, { order_id: 'order_1' });
    assert.equal(session.client_reference_id, 'order_1');
    assert.equal(session.customer_email, 'buyer@example.test');
    assert.equal(session.mode, 'payment');
    assert.equal(session.payment_status, 'unpaid');
    assert.equal(session.status, 'open');
    assert.equal(session.url, `${offline.url}/c/pay/${session.id}`);
    assert.equal(session.livemode, false);
    assert.equal(session.payment_intent, null);

    const [request] = offline.requests;
    assert.equal(request?.method, 'POST');
    assert.equal(request?.path, '/v1/checkout/sessions');
    assert.equal(request?.idempotencyKey, 'key-create');
    const lineItems = request?.params.line_items;
    assert.ok(Array.isArray(lineItems));
    assert.deepEqual(lineItems[0], {
      quantity: '2',
      price_data: { currency: 'usd', unit_amount: '1500', product_data: { name: 'T-shirt' } },
    });
  });

  void it('replays the saved response for the same key and parameters', async () => {
    const first = await stripe.checkout.sessions.create(checkoutParams('order_2'), { idempotencyKey: 'key-replay' });
    const second = await stripe.checkout.sessions.create(checkoutParams('order_2'), { idempotencyKey: 'key-replay' });

    assert.equal(second.id, first.id);
    assert.equal(second.lastResponse.headers['idempotent-replayed'], 'true');
    assert.equal(offline.sessions.size, 1);
    assert.equal(offline.requests.length, 2);
  });

  void it('rejects reusing a key with different parameters', async () => {
    await stripe.checkout.sessions.create(checkoutParams('order_3'), { idempotencyKey: 'key-mismatch' });

    await assert.rejects(stripe.checkout.sessions.create(checkoutParams('order_3', 9999), { idempotencyKey: 'key-mismatch' }), (err: unknown) => {
      assert.ok(err instanceof Stripe.errors.StripeIdempotencyError);
      assert.equal(err.statusCode, 400);
      assert.match(err.message, /same parameters they were first used with/);
      return true;
    });
    assert.equal(offline.sessions.size, 1);
  });

  void it('lets the SDK retry through a 500 with the same key and creates one session', async () => {
    offline.failNext(1);

    const session = await stripe.checkout.sessions.create(checkoutParams('order_4'), { idempotencyKey: 'key-retry' });

    assert.equal(offline.requests.length, 2);
    assert.deepEqual(
      offline.requests.map((r) => r.idempotencyKey),
      ['key-retry', 'key-retry'],
    );
    assert.deepEqual([...offline.sessions.keys()], [session.id]);
  });

  void it('answers 409 while the first request with a key is still executing, then converges', async () => {
    offline.setDelay(300);
    const [first, second] = await Promise.all([
      stripe.checkout.sessions.create(checkoutParams('order_5'), { idempotencyKey: 'key-inflight' }),
      // Sent once the first has started; the SDK retries the 409 after >= 500 ms and gets the replay.
      new Promise((resolve) => setTimeout(resolve, 50)).then(() =>
        stripe.checkout.sessions.create(checkoutParams('order_5'), { idempotencyKey: 'key-inflight' }),
      ),
    ]);

    assert.equal(second.id, first.id);
    assert.equal(offline.sessions.size, 1);
    assert.equal(offline.requests.length, 3);

    const inFlight = stripe.checkout.sessions.create(checkoutParams('order_6'), { idempotencyKey: 'key-409' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const conflict = await stripe.checkout.sessions
      .create(checkoutParams('order_6'), { idempotencyKey: 'key-409', maxNetworkRetries: 0 })
      .catch((err: unknown) => err);
    // stripe-node maps only 400/404 idempotency errors to StripeIdempotencyError; a 409 is a StripeAPIError.
    assert.ok(conflict instanceof Stripe.errors.StripeAPIError);
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.rawType, 'idempotency_error');
    await inFlight;
  });

  void it('does not save a result for a request that failed validation', async () => {
    const withoutMode = { ...checkoutParams('order_7'), mode: undefined };
    await assert.rejects(stripe.checkout.sessions.create(withoutMode, { idempotencyKey: 'key-validation' }), (err: unknown) => {
      assert.ok(err instanceof Stripe.errors.StripeInvalidRequestError);
      assert.equal(err.param, 'mode');
      return true;
    });

    const session = await stripe.checkout.sessions.create(checkoutParams('order_7'), { idempotencyKey: 'key-validation' });
    assert.equal(session.mode, 'payment');
  });

  void it('retrieves a stored session and reports unknown ids as resource_missing', async () => {
    const created = await stripe.checkout.sessions.create(checkoutParams('order_8'));
    const retrieved = await stripe.checkout.sessions.retrieve(created.id);
    assert.deepEqual({ ...retrieved, lastResponse: undefined }, { ...created, lastResponse: undefined });

    await assert.rejects(stripe.checkout.sessions.retrieve('cs_test_unknown'), (err: unknown) => {
      assert.ok(err instanceof Stripe.errors.StripeInvalidRequestError);
      assert.equal(err.statusCode, 404);
      assert.equal(err.code, 'resource_missing');
      return true;
    });
  });

  void it('closes promptly while a delayed request is in flight', async () => {
    offline.setDelay(10_000);
    const pending = fetch(`${offline.url}/v1/checkout/sessions/cs_test_x`, { headers: { Authorization: 'Bearer sk_test_offline' } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await offline.close();
    assert.ok(Date.now() - started < 1000);
    await assert.rejects(pending);
  });

  void it('requires a secret key and answers unknown routes in Stripe’s error shape', async () => {
    const noKey = await fetch(`${offline.url}/v1/checkout/sessions/cs_test_x`);
    assert.equal(noKey.status, 401);
    assert.equal(((await noKey.json()) as { error: { type: string } }).error.type, 'invalid_request_error');

    const unknown = await fetch(`${offline.url}/v1/customers`, { headers: { Authorization: 'Bearer sk_test_offline' } });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
  });

  void it('a subscription-mode session needs recurring prices and makes its subscription, which can be retrieved and cancelled at period end', async () => {
    const params = checkoutParams('subscr_1');
    await assert.rejects(stripe.checkout.sessions.create({ ...params, mode: 'subscription' }), /recurring\] is required in subscription mode/);
    await assert.rejects(
      stripe.checkout.sessions.create({
        ...params,
        line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 900, recurring: { interval: 'month' }, product_data: { name: 'Pro' } } }],
      }),
      /only allowed in subscription mode/,
    );
    await stripe.checkout.sessions.create({
      ...params,
      mode: 'subscription',
      line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 900, recurring: { interval: 'month' }, product_data: { name: 'Pro' } } }],
      subscription_data: { metadata: { subscription_id: 'subscr_1' } },
    });
    const subscription = await stripe.subscriptions.retrieve('sub_test_subscr_1');
    assert.deepEqual([subscription.status, subscription.cancel_at_period_end, subscription.metadata], ['active', false, { subscription_id: 'subscr_1' }]);
    const cancelled = await stripe.subscriptions.update('sub_test_subscr_1', { cancel_at_period_end: true }, { idempotencyKey: 'cancel-1' });
    assert.equal(cancelled.cancel_at_period_end, true);
    await assert.rejects(
      stripe.subscriptions.retrieve('sub_unknown'),
      (error: unknown) => error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing',
    );
  });

  void it("takes each mode's own object data, as Stripe does: payment_intent_data in payment mode, subscription_data in subscription mode", async () => {
    const recurring = [
      { quantity: 1, price_data: { currency: 'usd', unit_amount: 900, recurring: { interval: 'month' as const }, product_data: { name: 'Pro' } } },
    ];
    await stripe.checkout.sessions.create({ ...checkoutParams('order_2'), payment_intent_data: { metadata: { order_id: 'order_2', account_id: 'acct_2' } } });
    assert.deepEqual(offline.requests.at(-1)?.params.payment_intent_data, { metadata: { order_id: 'order_2', account_id: 'acct_2' } });
    await assert.rejects(
      stripe.checkout.sessions.create({
        ...checkoutParams('subscr_2'),
        mode: 'subscription',
        line_items: recurring,
        payment_intent_data: { metadata: { order_id: 'x' } },
      }),
      (error: unknown) => error instanceof Stripe.errors.StripeInvalidRequestError && error.param === 'payment_intent_data',
    );
    await assert.rejects(
      stripe.checkout.sessions.create({ ...checkoutParams('order_3'), subscription_data: { metadata: { subscription_id: 'x' } } }),
      (error: unknown) => error instanceof Stripe.errors.StripeInvalidRequestError && error.param === 'subscription_data',
    );
  });
});
