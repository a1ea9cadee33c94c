// Every type a module owns reaches the same outcome whichever way Stripe tells of it: snapshot
// events only, thin notifications only (from the snapshot event they name, or from the related
// object's current state when they name none), or both kinds for every happening, during a move
// from a snapshot endpoint to a thin destination, in either order. A package is paid and then
// refunded in full; a subscription's first period is paid.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PERIOD_SECONDS, periodEvents } from '../../src/modules/billing/sample-events.js';
import { refundedCharge, sampleEvent, thinNotification, type SampleEvent } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, orderRow, paidEvent, quotaOf } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';
import { subscribedThroughApi } from '../support/subscriptions.js';

const file = serviceForFile();

type Mode = 'snapshot' | 'thin' | 'thin, current state' | 'both, thin first' | 'both, snapshot first';
const MODES: readonly Mode[] = ['snapshot', 'thin', 'thin, current state', 'both, thin first', 'both, snapshot first'];

/**
 * Tells Stripe's side of each event (its Event listed, its object's latest state retrievable),
 * delivers them all as the mode says (some wait for others, as in production), then waits until
 * every delivery is finished: each happening fulfilled by one delivery, any other 'duplicate' of it.
 */
async function happen(mode: Mode, events: readonly SampleEvent[]): Promise<void> {
  const happenings = events.map((event) => {
    file.service.stripe.addEvent({ ...event });
    file.service.stripe.addObject(event.data.object);
    const thin = thinNotification(event, { withSnapshot: mode !== 'thin, current state' });
    return mode === 'snapshot' ? [event] : mode.startsWith('thin') ? [thin] : mode === 'both, thin first' ? [thin, event] : [event, thin];
  });
  for (const delivery of happenings.flat()) assert.equal((await file.service.deliver(delivery)).status, 200, `${mode}: ${delivery.type}`);
  for (const [i, deliveries] of happenings.entries()) {
    const rows = await Promise.all(deliveries.map((delivery) => finishedEvent(file.database, delivery.id, { timeoutMs: 30_000 })));
    const acting = rows.filter((row) => row.status !== 'duplicate');
    const told = `${mode}, ${events[i]!.type}: ${rows.map((row) => `${row.status} ${row.last_error ?? ''}`).join(', ')}`;
    assert.equal(acting.length, 1, told);
    assert.ok(['processed', 'ignored'].includes(acting[0]!.status), told);
    for (const row of rows) if (row.status === 'duplicate') assert.equal(row.duplicate_of, acting[0]!.event_id);
  }
}

describe('a package paid, then refunded in full', () => {
  for (const mode of MODES) {
    test(`${mode}: granted once, then taken back, the order refunded`, async () => {
      const order = await givenOrder(file.database);
      const paid = paidEvent(order);
      await happen(mode, [paid]);
      assert.equal((await quotaOf(file.database, order.account_id)).granted, order.credits);

      const paymentIntentId = (await orderRow(file.database, order.order_id)).payment_intent_id!;
      const charge = refundedCharge({ paymentIntentId, amount: order.amount, currency: order.currency, amountRefunded: order.amount, orderId: order.order_id });
      await happen(mode, [sampleEvent('charge.refunded', charge)]);
      assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 0, used: 0, remaining: 0 });
      assert.equal((await orderRow(file.database, order.order_id)).status, 'refunded');
    });
  }
});

describe("a subscription's first period", () => {
  for (const mode of MODES) {
    test(`${mode}: the plan's credits granted once, the subscription active with its period`, async () => {
      const subscription = await subscribedThroughApi(file);
      const start = Math.floor(Date.now() / 1000) - 60;
      await happen(mode, periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS }));

      assert.deepEqual(await quotaOf(file.database, subscription.accountId), { account_id: subscription.accountId, granted: 100, used: 0, remaining: 100 });
      const row = await file.database.db
        .selectFrom('subscriptions')
        .select(['status', 'stripe_subscription_id', 'current_period_end'])
        .where('subscription_id', '=', subscription.subscriptionId)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        [row.status, row.stripe_subscription_id, row.current_period_end?.getTime()],
        ['active', subscription.stripeSubscriptionId, (start + PERIOD_SECONDS) * 1000],
      );
    });
  }
});
