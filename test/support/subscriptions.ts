// Our subscriptions in tests, made as POST /api/subscriptions makes them (the row, then the id of
// the Checkout Session Stripe answered with), and linked to a Stripe subscription only the way
// production links one: by that session's checkout.session.completed.
import assert from 'node:assert/strict';
import { billingModule } from '../../src/modules/billing/index.js';
import { checkoutSessionObject, type SampleSubscription } from '../../src/modules/billing/sample-events.js';
import { noWaiters } from './no-waiters.js';
import { createSubscription, storeCheckoutSession } from '../../src/modules/billing/subscriptions.js';
import { randomStripeId, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import type { TestDatabase } from './database.js';
import { finishedEvent, newAccountId } from './factories.js';
import { fulfilWith, handlersOf } from './handlers.js';
import type { TestService } from './service.js';

export interface GivenSubscription extends SampleSubscription {
  accountId: string;
  checkoutSessionId: string;
}

/** The checkout.session.completed of the subscription's Checkout Session, naming its Stripe subscription. */
export function checkoutCompleted(subscription: SampleSubscription, overrides: Partial<SampleEvent> = {}): SampleEvent {
  return sampleEvent('checkout.session.completed', checkoutSessionObject(subscription), overrides);
}

/**
 * A pending subscription to 'pro_monthly' with its Checkout Session stored (`cs_test_<id>`), for a
 * new Stripe subscription; `linked`: its checkout.session.completed fulfilled by the billing
 * module's handlers (no worker: for tests that drive handlers with fulfilWith).
 */
export async function givenSubscription(database: TestDatabase, { linked = false } = {}): Promise<GivenSubscription> {
  const accountId = newAccountId();
  const row = await createSubscription(database.db, { planId: 'pro_monthly', accountId, email: null });
  if (!row) throw new Error('the pro_monthly plan is missing from the test database');
  const checkoutSessionId = `cs_test_${row.subscription_id}`;
  await storeCheckoutSession(database.db, row.subscription_id, checkoutSessionId, noWaiters);
  const subscription = {
    subscriptionId: row.subscription_id,
    stripeSubscriptionId: randomStripeId('sub'),
    amount: row.amount,
    currency: row.currency,
    accountId,
    checkoutSessionId,
  };
  if (linked) {
    const [done] = await fulfilWith(database, handlersOf(billingModule), [checkoutCompleted(subscription)]);
    assert.equal(done!.row.status, 'processed', `the checkout that links it: ${done!.row.status}, ${done!.row.last_error}`);
  }
  return subscription;
}

/**
 * A subscription started through the running service (POST /api/subscriptions) to `plan` (the
 * seeded 'pro_monthly' unless given), for a new Stripe subscription; `linked`: its checkout.session.completed delivered and fulfilled by the worker.
 */
export async function subscribedThroughApi(
  file: { service: TestService; database: TestDatabase },
  { linked = false, plan = { id: 'pro_monthly', amount: 1900, currency: 'chf' } } = {},
): Promise<GivenSubscription> {
  const accountId = newAccountId();
  const reply = await file.service.call('POST', '/api/subscriptions', { body: { plan_id: plan.id, account_id: accountId } });
  assert.equal(reply.status, 201);
  const subscription = {
    subscriptionId: reply.body.subscription_id as string,
    checkoutSessionId: reply.body.checkout_session_id as string,
    stripeSubscriptionId: randomStripeId('sub'),
    amount: plan.amount,
    currency: plan.currency,
    accountId,
  };
  if (linked) {
    const event = checkoutCompleted(subscription);
    assert.equal((await file.service.deliver(event)).status, 200);
    const row = await finishedEvent(file.database, event.id);
    assert.equal(row.status, 'processed', `the checkout that links it: ${row.status}, ${row.last_error}`);
  }
  return subscription;
}
