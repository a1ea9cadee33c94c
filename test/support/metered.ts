// A usage-billed plan in tests, made as an operator makes one (a metered Stripe Price on a meter,
// then POST /admin/api/plans naming both), and an account subscribed to it as production
// subscribes one: POST /api/subscriptions, then its checkout.session.completed (which stores the
// customer) and the subscription's state, fulfilled by the service's worker when it runs one, else
// by the billing module's handlers.
import assert from 'node:assert/strict';
import { billingModule } from '../../src/modules/billing/index.js';
import { PERIOD_SECONDS, subscriptionObject } from '../../src/modules/billing/sample-events.js';
import { randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';
import { finishedEvent } from './factories.js';
import { fulfilWith, handlersOf } from './handlers.js';
import type { OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import type { FileService } from './service.js';
import { checkoutCompleted, subscribedThroughApi, type GivenSubscription } from './subscriptions.js';

let plans = 0;

export interface MeteredAccount extends GivenSubscription {
  eventName: string;
  stripeCustomerId: string;
}

/** A metered Price of 5 chf a use on `meter` (none: a metered Price that names no meter), and its Product, in the stand-in; its id. */
export function meteredPrice(stripe: OfflineStripe, meter: string | null): string {
  const product = randomStripeId('prod');
  const price = randomStripeId('price');
  stripe.addProduct({ id: product, object: 'product', active: true, name: 'API calls' });
  stripe.addPrice({
    id: price,
    object: 'price',
    active: true,
    currency: 'chf',
    unit_amount: 5,
    type: 'recurring',
    recurring: { interval: 'month', interval_count: 1, usage_type: 'metered', meter },
    product,
  });
  return price;
}

/** A new usage-billed plan on a new meter, granting no credits, and a new account subscribed to it, active. */
export async function meteredAccount(file: FileService): Promise<MeteredAccount> {
  const n = ++plans;
  const eventName = `api_calls_${process.pid}_${n}`;
  const price = meteredPrice(file.service.stripe, file.service.stripe.addMeter(eventName));
  const plan = { id: `metered_${n}`, amount: 5, currency: 'chf' };
  const added = await file.service.call('POST', '/admin/api/plans', {
    body: { ...plan, name: 'API calls, by use', credits: 0, interval: 'month', stripe_price_id: price, meter_event_name: eventName },
  });
  assert.equal(added.status, 201, JSON.stringify(added.body));
  const customerId = randomStripeId('cus');
  const subscription = { ...(await subscribedThroughApi(file, { plan })), customerId, stripeCustomerId: customerId };
  const active = sampleEvent(
    'customer.subscription.updated',
    subscriptionObject(subscription, { status: 'active', periodEnd: Math.floor(Date.now() / 1000) + PERIOD_SECONDS }),
  );
  const events = [checkoutCompleted(subscription), active];
  if (file.service.worker) {
    // The service's worker fulfils them, in order.
    for (const event of events) {
      assert.equal((await file.service.deliver(event)).status, 200);
      const row = await finishedEvent(file.database, event.id);
      assert.equal(row.status, 'processed', `${row.type}: ${row.last_error}`);
    }
  } else {
    const done = await fulfilWith(file.database, handlersOf(billingModule), events);
    for (const { row } of done) assert.equal(row.status, 'processed', `${row.type}: ${row.last_error}`);
  }
  return { ...subscription, eventName };
}
