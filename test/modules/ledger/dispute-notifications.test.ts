// A dispute tells the app twice at most, once when it starts to hold the purchase's credits back
// (order.disputed, subscription.period_disputed) and once when its funds are reinstated
// (order.dispute_reinstated, subscription.period_dispute_reinstated), whatever repeats the events
// that made them: Stripe's retry, a second Event object, an ops replay.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PERIOD_SECONDS, periodEvents } from '../../../src/modules/billing/sample-events.js';
import { disputeObject, randomStripeId, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent, paidOrder } from '../../support/factories.js';
import { notifyingServiceForFile, receivedWhere } from '../../support/notification-receiver.js';
import { subscribedThroughApi } from '../../support/subscriptions.js';
import { waitFor } from '../../support/wait-for.js';

const file = notifyingServiceForFile();

/** Each event delivered twice, a second Event object for it, and the first replayed by ops: all processed. */
async function deliverEveryWay(event: SampleEvent) {
  await file.service.deliver(event);
  await file.service.deliver(event);
  const twin = sampleEvent(event.type, event.data.object, { created: event.created });
  await file.service.deliver(twin);
  for (const id of [event.id, twin.id]) assert.equal((await finishedEvent(file.database, id)).status, 'processed');
  assert.equal((await file.service.call('POST', `/admin/api/events/${event.id}/replay`)).status, 202);
  assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
}

/** The dispute's two events, withdrawn then reinstated, for the charge paid by `paymentIntentId`. */
function disputeEvents(paymentIntentId: string, amount: number, currency: string) {
  const dispute = { paymentIntentId, amount, currency, disputeId: randomStripeId('dp'), chargeId: randomStripeId('ch') };
  const at = Math.floor(Date.now() / 1000);
  return {
    disputeId: dispute.disputeId,
    withdrawn: sampleEvent('charge.dispute.funds_withdrawn', disputeObject({ ...dispute, status: 'needs_response' }), { created: at + 60 }),
    reinstated: sampleEvent('charge.dispute.funds_reinstated', disputeObject({ ...dispute, status: 'won' }), { created: at + 120 }),
  };
}

describe('a dispute notifies once per direction', () => {
  test('of a package order: order.disputed with the credits taken back, order.dispute_reinstated with those given back', async () => {
    const order = await paidOrder(file.database, file.service);
    const dispute = disputeEvents(order.payment_intent_id, order.amount, order.currency);
    await deliverEveryWay(dispute.withdrawn);
    await deliverEveryWay(dispute.reinstated);
    const ofOrder = (type: string) => (r: { type: string; data: Record<string, unknown> }) => r.type === type && r.data.order_id === order.order_id;
    const [disputed] = await waitFor('order.disputed', receivedWhere(file.receiver, ofOrder('order.disputed')));
    const [reinstated] = await waitFor('order.dispute_reinstated', receivedWhere(file.receiver, ofOrder('order.dispute_reinstated')));
    assert.deepEqual(disputed!.data, {
      account_id: order.account_id,
      order_id: order.order_id,
      dispute_id: dispute.disputeId,
      dispute_status: 'needs_response',
      credits_revoked: 40,
      balance: { granted: 0, used: 0, remaining: 0 },
      sequence: 2,
    });
    assert.deepEqual(reinstated!.data, {
      account_id: order.account_id,
      order_id: order.order_id,
      dispute_id: dispute.disputeId,
      dispute_status: 'won',
      credits_returned: 40,
      balance: { granted: 40, used: 0, remaining: 40 },
      sequence: 3,
    });
    const all = file.receiver.unique().filter((r) => r.data.account_id === order.account_id);
    assert.deepEqual(all.map((r) => r.type).sort(), ['order.dispute_reinstated', 'order.disputed', 'order.paid']);
  });

  test('of a subscription period: subscription.period_disputed and subscription.period_dispute_reinstated', async () => {
    const subscription = await subscribedThroughApi(file);
    const start = Math.floor(Date.now() / 1000) - 60;
    const events = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
    for (const event of events) await file.service.deliver(event);
    for (const event of events) await finishedEvent(file.database, event.id);
    const paymentIntentId = (events.find((e) => e.type === 'payment_intent.succeeded')!.data.object as { id: string }).id;
    const invoiceId = (events.find((e) => e.type === 'invoice.paid')!.data.object as { id: string }).id;
    const dispute = disputeEvents(paymentIntentId, subscription.amount, subscription.currency);
    await deliverEveryWay(dispute.withdrawn);
    await deliverEveryWay(dispute.reinstated);
    const ofPeriod = (type: string) => (r: { type: string; data: Record<string, unknown> }) => r.type === type && r.data.invoice_id === invoiceId;
    const [disputed] = await waitFor('subscription.period_disputed', receivedWhere(file.receiver, ofPeriod('subscription.period_disputed')));
    const [reinstated] = await waitFor(
      'subscription.period_dispute_reinstated',
      receivedWhere(file.receiver, ofPeriod('subscription.period_dispute_reinstated')),
    );
    const common = { account_id: subscription.accountId, subscription_id: subscription.subscriptionId, invoice_id: invoiceId, dispute_id: dispute.disputeId };
    assert.deepEqual(disputed!.data, {
      ...common,
      dispute_status: 'needs_response',
      credits_revoked: 100,
      balance: { granted: 0, used: 0, remaining: 0 },
      sequence: disputed!.data.sequence,
    });
    assert.deepEqual(reinstated!.data, {
      ...common,
      dispute_status: 'won',
      credits_returned: 100,
      balance: { granted: 100, used: 0, remaining: 100 },
      sequence: Number(disputed!.data.sequence) + 1,
    });
    const all = file.receiver.unique().filter((r) => r.data.invoice_id === invoiceId && String(r.type).includes('dispute'));
    assert.equal(all.length, 2);
  });
});
