// The billing API: plans, starting a subscription (our row first, then Checkout in subscription
// mode with the outbound key `checkout-session:<subscription_id>`), the caller's Idempotency-Key as
// on POST /api/checkout, reading one, and cancelling at period end through Stripe with
// `subscription-cancel:<subscription_id>` (and a new key once the customer resumed it in Stripe).
// The worker role is off: events are fulfilled in the tests that need them.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { billingModule } from '../../../src/modules/billing/index.js';
import { subscriptionObject } from '../../../src/modules/billing/sample-events.js';
import { sampleEvent } from '../../../src/stripe/sample-events.js';
import { newAccountId } from '../../support/factories.js';
import { fulfilWith, handlersOf } from '../../support/handlers.js';
import { waitFor } from '../../support/wait-for.js';
import { ADMIN_TOKEN, serviceForFile, type HttpReply } from '../../support/service.js';
import { checkoutCompleted, subscribedThroughApi, type GivenSubscription } from '../../support/subscriptions.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

const subscribe = (body: unknown, idempotencyKey?: string): Promise<HttpReply> =>
  file.service.call('POST', '/api/subscriptions', { body, ...(idempotencyKey !== undefined && { headers: { 'idempotency-key': idempotencyKey } }) });
const sessionCreatesFor = (subscriptionId: unknown) =>
  file.service.stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions' && r.params.client_reference_id === subscriptionId);

test('GET /api/plans lists the seeded plan, credits per period', async () => {
  const reply = await file.service.call('GET', '/api/plans');
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, [
    { id: 'pro_monthly', name: 'Pro: 100 runs a month', amount: 1900, currency: 'chf', interval: 'month', interval_count: 1, credits: 100, features: [] },
  ]);
});

test('the billing routes need the API token', async () => {
  for (const [method, path] of [
    ['GET', '/api/plans'],
    ['POST', '/api/subscriptions'],
    ['GET', '/api/subscriptions/subscr_x'],
    ['POST', '/api/subscriptions/subscr_x/cancel'],
  ] as const) {
    for (const token of [null, ADMIN_TOKEN]) assert.equal((await file.service.call(method, path, { token })).status, 401, `${method} ${path}`);
  }
});

describe('POST /api/subscriptions', () => {
  test('stores a pending subscription, then opens Checkout in subscription mode that names it everywhere', async () => {
    const accountId = newAccountId();
    const reply = await subscribe({ plan_id: 'pro_monthly', account_id: accountId, email: 'ada@example.test' });
    assert.equal(reply.status, 201);
    const subscriptionId = reply.body.subscription_id as string;
    assert.match(subscriptionId, /^subscr_[0-9a-f]{32}$/);
    assert.match(reply.body.checkout_session_id as string, /^cs_test_/);
    assert.match(reply.body.url as string, /^http:\/\/127\.0\.0\.1:\d+\/c\/pay\/cs_test_/);

    const [create, ...more] = sessionCreatesFor(subscriptionId);
    assert.equal(more.length, 0);
    assert.equal(create!.idempotencyKey, `checkout-session:${subscriptionId}`);
    assert.deepEqual(create!.params.line_items, [
      {
        quantity: '1',
        price_data: {
          currency: 'chf',
          unit_amount: '1900',
          recurring: { interval: 'month', interval_count: '1' },
          product_data: { name: 'Pro: 100 runs a month' },
        },
      },
    ]);
    assert.equal(create!.params.mode, 'subscription');
    assert.deepEqual(create!.params.metadata, { subscription_id: subscriptionId });
    assert.deepEqual(create!.params.subscription_data, { metadata: { subscription_id: subscriptionId } });
    assert.equal(create!.params.customer_email, 'ada@example.test');

    const row = await file.database.db.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();
    assert.deepEqual(
      [row.status, row.account_id, row.plan_id, row.amount, row.currency, row.credits, row.checkout_session_id],
      ['pending', accountId, 'pro_monthly', 1900, 'chf', 100, reply.body.checkout_session_id],
    );
  });

  test('names what is wrong with the body, and makes nothing', async () => {
    const accountId = newAccountId();
    for (const [body, message] of [
      [{ plan_id: 'gold', account_id: accountId }, /unknown plan_id "gold"; GET \/api\/plans lists them/],
      [{ plan_id: 'pro_monthly' }, /account_id/],
      [{ plan_id: 'pro_monthly', account_id: accountId, email: 'not-an-email' }, /email: must be an email address/],
      [{ plan_id: 'pro_monthly', account_id: accountId, coupon: 'FREE' }, /coupon/],
    ] as const) {
      const reply = await subscribe(body);
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.match(reply.body.error as string, message);
    }
    assert.deepEqual(await file.database.db.selectFrom('subscriptions').select('subscription_id').where('account_id', '=', accountId).execute(), []);
  });

  test('an Idempotency-Key replays the first answer with one subscription and one session; another body with it is 422', async () => {
    const accountId = newAccountId();
    const key = randomUUID();
    const body = { plan_id: 'pro_monthly', account_id: accountId };
    const first = await subscribe(body, key);
    const again = await subscribe(body, key);
    assert.equal(first.status, 201);
    assert.deepEqual(again, first);
    assert.equal(sessionCreatesFor(first.body.subscription_id).length, 1);
    assert.equal((await subscribe({ ...body, email: 'other@example.test' }, key)).status, 422);
    // The same key on the package checkout is another key: scoped by operation.
    assert.equal(
      (await file.service.call('POST', '/api/checkout', { body: { package_id: 'starter', account_id: accountId }, headers: { 'idempotency-key': key } }))
        .status,
      201,
    );
    assert.equal((await file.database.db.selectFrom('subscriptions').select('subscription_id').where('account_id', '=', accountId).execute()).length, 1);
  });

  test('a Stripe failure is 502 with the subscription id; the retry with the same key creates one session', async () => {
    const key = randomUUID();
    const body = { plan_id: 'pro_monthly', account_id: newAccountId() };
    file.service.stripe.failNext(2); // the SDK's first try and its one retry (src/stripe/client.ts)
    const failed = await subscribe(body, key);
    assert.equal(failed.status, 502);
    assert.match(failed.body.error as string, /Stripe could not create the checkout session/);
    const retried = await subscribe(body, key);
    assert.equal(retried.status, 201);
    assert.equal(retried.body.subscription_id, failed.body.subscription_id);
    assert.equal([...file.service.stripe.sessions.values()].filter((s) => s.client_reference_id === failed.body.subscription_id).length, 1);
  });
});

describe('GET /api/subscriptions/:id and POST /api/subscriptions/:id/cancel', () => {
  /** Linked as production links it: its checkout.session.completed, fulfilled by the billing module's handlers (no worker runs in this file). */
  async function linkedSubscription(): Promise<GivenSubscription> {
    const subscription = await subscribedThroughApi(file);
    const [linked] = await fulfilWith(file.database, handlersOf(billingModule), [checkoutCompleted(subscription)]);
    assert.equal(linked!.row.status, 'processed');
    return subscription;
  }

  test('a new subscription reads as pending, with no Stripe subscription yet; cancelling it is 409', async () => {
    const { subscriptionId, checkoutSessionId } = await subscribedThroughApi(file);
    const reply = await file.service.call('GET', `/api/subscriptions/${subscriptionId}`);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, {
      subscription_id: subscriptionId,
      status: 'pending',
      plan_id: 'pro_monthly',
      account_id: reply.body.account_id,
      checkout_session_id: checkoutSessionId,
      stripe_subscription_id: null,
      current_period_end: null,
      cancel_at_period_end: false,
      pause_collection: null,
    });
    const cancel = await file.service.call('POST', `/api/subscriptions/${subscriptionId}/cancel`);
    assert.equal(cancel.status, 409);
    assert.match(cancel.body.error as string, /no Stripe subscription yet/);
  });

  test('a subscription whose collection Stripe paused reads as active, with the pause and when it resumes', async () => {
    const { subscriptionId, stripeSubscriptionId } = await linkedSubscription();
    const periodEnd = Math.floor(Date.now() / 1000) + 30 * 24 * 3600;
    const resumesAt = periodEnd + 30 * 24 * 3600;
    const paused = sampleEvent(
      'customer.subscription.updated',
      subscriptionObject(
        { subscriptionId, stripeSubscriptionId, amount: 1900, currency: 'chf' },
        { status: 'active', periodEnd, pause: { behavior: 'mark_uncollectible', resumesAt } },
      ),
    );
    assert.equal((await fulfilWith(file.database, handlersOf(billingModule), [paused]))[0]!.row.status, 'processed');
    const reply = await file.service.call('GET', `/api/subscriptions/${subscriptionId}`);
    assert.deepEqual(
      [reply.body.status, reply.body.pause_collection],
      ['active', { behavior: 'mark_uncollectible', resumes_at: new Date(resumesAt * 1000).toISOString() }],
    );
  });

  test('unknown ids are 404; malformed ones 400', async () => {
    assert.equal((await file.service.call('GET', '/api/subscriptions/subscr_unknown')).status, 404);
    assert.equal((await file.service.call('POST', '/api/subscriptions/subscr_unknown/cancel')).status, 404);
    assert.equal((await file.service.call('GET', `/api/subscriptions/${encodeURIComponent('a b')}`)).status, 400);
  });

  test('cancel goes to Stripe with its key, and answers with the state Stripe gave back; repeating it is the same request, whose replayed answer never overwrites a newer state', async () => {
    const { subscriptionId, stripeSubscriptionId } = await linkedSubscription();
    const periodEnd = Math.floor(Date.now() / 1000) + 30 * 24 * 3600;
    file.service.stripe.addSubscription(
      subscriptionObject({ subscriptionId, stripeSubscriptionId, amount: 1900, currency: 'chf' }, { status: 'active', periodEnd }),
    );

    const cancel = () => file.service.call('POST', `/api/subscriptions/${subscriptionId}/cancel`);
    const first = await cancel();
    // The next whole second: after the first call's state, before the second call begins.
    const between = Math.ceil(Date.now() / 1000);
    assert.equal(first.status, 200);
    assert.deepEqual(
      [first.body.status, first.body.cancel_at_period_end, first.body.stripe_subscription_id, first.body.current_period_end],
      ['active', true, stripeSubscriptionId, new Date(periodEnd * 1000).toISOString()],
    );
    // A renewal fails after the first cancel: Stripe tells us with a newer event (no worker runs
    // in this file: the billing module's handlers fulfil it as the worker would).
    const pastDue = sampleEvent(
      'customer.subscription.updated',
      subscriptionObject({ subscriptionId, stripeSubscriptionId, amount: 1900, currency: 'chf' }, { status: 'past_due', periodEnd, cancelAtPeriodEnd: true }),
      { created: between },
    );
    const [fulfilled] = await fulfilWith(file.database, handlersOf(billingModule), [pastDue]);
    assert.equal(fulfilled!.row.status, 'processed');

    await waitFor('the clock to pass the event', () => Promise.resolve(Date.now() > between * 1000));
    const second = await cancel();
    assert.equal(second.status, 200);
    assert.deepEqual([second.body.status, second.body.cancel_at_period_end], ['past_due', true], "Stripe's replayed first answer ('active') is not applied");
    assert.equal((await file.service.call('GET', `/api/subscriptions/${subscriptionId}`)).body.status, 'past_due');
    const updates = file.service.stripe.requests.filter((r) => r.method === 'POST' && r.path === `/v1/subscriptions/${stripeSubscriptionId}`);
    assert.equal(updates.length, 2);
    for (const update of updates) {
      assert.equal(update.idempotencyKey, `subscription-cancel:${subscriptionId}`);
      assert.deepEqual(update.params, { cancel_at_period_end: 'true' });
    }
  });

  test('cancelling a subscription that has ended answers with its state, without asking Stripe (which refuses to change it)', async () => {
    const { subscriptionId, stripeSubscriptionId } = await linkedSubscription();
    const deleted = sampleEvent(
      'customer.subscription.deleted',
      subscriptionObject(
        { subscriptionId, stripeSubscriptionId, amount: 1900, currency: 'chf' },
        { status: 'canceled', periodEnd: Math.floor(Date.now() / 1000) },
      ),
    );
    assert.equal((await fulfilWith(file.database, handlersOf(billingModule), [deleted]))[0]!.row.status, 'processed');

    const cancel = await file.service.call('POST', `/api/subscriptions/${subscriptionId}/cancel`);
    assert.deepEqual([cancel.status, cancel.body.status], [200, 'canceled']);
    assert.equal(file.service.stripe.requests.filter((r) => r.path === `/v1/subscriptions/${stripeSubscriptionId}`).length, 0);
  });

  test('a cancel after the customer resumed in Stripe cancels again, not a replay of the first; its retry is the same request', async () => {
    const { subscriptionId, stripeSubscriptionId } = await linkedSubscription();
    const periodEnd = Math.floor(Date.now() / 1000) + 30 * 24 * 3600;
    const stripeObject = (cancelAtPeriodEnd: boolean) =>
      subscriptionObject({ subscriptionId, stripeSubscriptionId, amount: 1900, currency: 'chf' }, { status: 'active', periodEnd, cancelAtPeriodEnd });
    file.service.stripe.addSubscription(stripeObject(false));
    const cancel = () => file.service.call('POST', `/api/subscriptions/${subscriptionId}/cancel`);

    assert.equal((await cancel()).body.cancel_at_period_end, true);
    const resumedAt = Math.ceil(Date.now() / 1000);
    // The customer resumes in Stripe's portal, within the first cancel's idempotency window, and
    // Stripe tells us with an event.
    file.service.stripe.addSubscription(stripeObject(false));
    const resumed = sampleEvent('customer.subscription.updated', stripeObject(false), { created: resumedAt });
    assert.equal((await fulfilWith(file.database, handlersOf(billingModule), [resumed]))[0]!.row.status, 'processed');
    assert.equal((await file.service.call('GET', `/api/subscriptions/${subscriptionId}`)).body.cancel_at_period_end, false);

    await waitFor('the clock to pass the event', () => Promise.resolve(Date.now() > resumedAt * 1000));
    const again = await cancel();
    assert.equal(again.status, 200);
    assert.equal(again.body.cancel_at_period_end, true);
    assert.equal(file.service.stripe.subscriptions.get(stripeSubscriptionId)!.cancel_at_period_end, true, 'canceling at Stripe, not only in our answer');
    const retried = await cancel();
    assert.deepEqual([retried.status, retried.body.cancel_at_period_end], [200, true]);

    const keys = file.service.stripe.requests
      .filter((r) => r.method === 'POST' && r.path === `/v1/subscriptions/${stripeSubscriptionId}`)
      .map((r) => r.idempotencyKey);
    const first = `subscription-cancel:${subscriptionId}`;
    assert.deepEqual(keys, [first, first, `${first}:after:${resumedAt}`, first]);
  });
});
