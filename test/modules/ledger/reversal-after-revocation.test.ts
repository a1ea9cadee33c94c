// A run reversed after a refund or dispute of the purchase whose credits it used: the refund could
// take back nothing then (credits in use stay used), and the reversal makes them unused. They are
// taken back at once (credits_revoked), so the balance ends as if the run had been reversed before
// the refund: a buyer refunded in full keeps no credits, whichever came first. Orders and paid
// periods alike; a dispute reinstated afterwards gives back what the reversal paid.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PERIOD_SECONDS, periodEvents } from '../../../src/modules/billing/sample-events.js';
import { addGrants } from '../../../src/modules/ledger/account-credits.js';
import { disputeObject, randomStripeId, refundedCharge, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent, paidOrder, quotaOf } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';
import { subscribedThroughApi } from '../../support/subscriptions.js';

const file = serviceForFile();

async function deliverAndFinish(event: SampleEvent): Promise<void> {
  assert.equal((await file.service.deliver(event)).status, 200);
  const row = await finishedEvent(file.database, event.id);
  assert.equal(row.status, 'processed', `${event.type}: ${row.status}, ${row.last_error}`);
}

const run = async (accountId: string, quantity: number): Promise<string> => {
  const reply = await file.service.call('POST', `/api/accounts/${accountId}/runs`, { body: { quantity } });
  assert.equal(reply.status, 201);
  return reply.body.run_id as string;
};
const reverse = (accountId: string, runId: string) => file.service.call('POST', `/api/accounts/${accountId}/runs/${runId}/reverse`);
const remaining = async (accountId: string) => (await quotaOf(file.database, accountId)).remaining;

/** A paid order of 40 credits (4900 chf), and the event of its full refund or of a part of it. */
async function order() {
  const paid = await paidOrder(file.database, file.service);
  const refunded = (amountRefunded: number) =>
    sampleEvent(
      'charge.refunded',
      refundedCharge({ paymentIntentId: paid.payment_intent_id, amount: paid.amount, currency: paid.currency, amountRefunded, orderId: paid.order_id }),
    );
  return { ...paid, refunded };
}

const revocationOf = (orderId: string) =>
  file.database.db.selectFrom('credit_revocations').select(['target_credits', 'revoked_credits']).where('order_id', '=', orderId).executeTakeFirstOrThrow();

describe("an order's refund before a run of its credits is reversed", () => {
  test('a full refund that took nothing: the reversal takes the 40 back, as a refund after the reversal would have', async () => {
    const refundedFirst = await order();
    const runId = await run(refundedFirst.account_id, 40);
    await deliverAndFinish(refundedFirst.refunded(refundedFirst.amount));
    assert.equal(await remaining(refundedFirst.account_id), 0);
    const reversed = await reverse(refundedFirst.account_id, runId);
    assert.equal(reversed.status, 200);
    assert.deepEqual([reversed.body.quantity, reversed.body.credits_revoked, reversed.body.remaining], [40, 40, 0]);
    assert.deepEqual(await revocationOf(refundedFirst.order_id), { target_credits: 40, revoked_credits: 40 });
    assert.equal((await reverse(refundedFirst.account_id, runId)).status, 409, 'and only once');

    const reversedFirst = await order();
    const before = await run(reversedFirst.account_id, 40);
    assert.equal((await reverse(reversedFirst.account_id, before)).body.credits_revoked, 0);
    await deliverAndFinish(reversedFirst.refunded(reversedFirst.amount));
    const balance = async (accountId: string) => {
      const { granted, used, remaining } = await quotaOf(file.database, accountId);
      return { granted, used, remaining };
    };
    const emptied = { granted: 0, used: 0, remaining: 0 };
    assert.deepEqual([await balance(refundedFirst.account_id), await balance(reversedFirst.account_id)], [emptied, emptied]);
  });

  test('a refund and the reversal at once: whichever commits first, the refunded credits end taken back, never twice', async () => {
    for (let trial = 1; trial <= 5; trial++) {
      const paid = await order();
      const runId = await run(paid.account_id, 40);
      const refunded = paid.refunded(paid.amount);
      const [delivered, reversed] = await Promise.all([file.service.deliver(refunded), reverse(paid.account_id, runId)]);
      assert.deepEqual([delivered.status, reversed.status], [200, 200], `trial ${trial}`);
      assert.equal((await finishedEvent(file.database, refunded.id)).status, 'processed', `trial ${trial}`);
      assert.deepEqual(await quotaOf(file.database, paid.account_id), { account_id: paid.account_id, granted: 0, used: 0, remaining: 0 }, `trial ${trial}`);
      assert.deepEqual(await revocationOf(paid.order_id), { target_credits: 40, revoked_credits: 40 }, `trial ${trial}`);
    }
  });

  test('what the refund still claims is taken, no more: the rest of a larger run, and other purchases, stay', async () => {
    const first = await order();
    const accountId = first.account_id;
    const runId = await run(accountId, 30);
    await deliverAndFinish(first.refunded(first.amount));
    assert.equal(await remaining(accountId), 0, 'the 10 unused taken back; 30 in use');
    assert.deepEqual(await revocationOf(first.order_id), { target_credits: 40, revoked_credits: 10 });

    // 20 more credits of another purchase, in use by another run, while the first is reversed.
    await file.database.db.transaction().execute((tx) => addGrants(tx, [{ accountId, credits: 20 }]));
    const other = await run(accountId, 20);
    const reversed = await reverse(accountId, runId);
    assert.deepEqual([reversed.body.credits_revoked, reversed.body.remaining], [30, 0]);
    const again = await reverse(accountId, other);
    assert.deepEqual([again.body.credits_revoked, again.body.remaining], [0, 20], 'the refund is paid: the other purchase keeps its credits');
    assert.deepEqual(await revocationOf(first.order_id), { target_credits: 40, revoked_credits: 40 });
  });

  test('a dispute whose funds were withdrawn is paid the same way; reinstated, it gives back all it took', async () => {
    const disputed = await order();
    const accountId = disputed.account_id;
    const runId = await run(accountId, 40);
    const ids = { disputeId: randomStripeId('dp'), chargeId: randomStripeId('ch') };
    const at = Math.floor(Date.now() / 1000);
    const dispute = (type: string, status: string, minutes: number) =>
      sampleEvent(type, disputeObject({ paymentIntentId: disputed.payment_intent_id, amount: disputed.amount, currency: disputed.currency, status, ...ids }), {
        created: at + minutes * 60,
      });
    await deliverAndFinish(dispute('charge.dispute.funds_withdrawn', 'needs_response', 1));
    assert.equal((await reverse(accountId, runId)).body.credits_revoked, 40);
    assert.equal(await remaining(accountId), 0);
    await deliverAndFinish(dispute('charge.dispute.funds_reinstated', 'won', 2));
    assert.equal(await remaining(accountId), 40);
  });
});

test("a paid period's refund before a run of its credits is reversed: the reversal takes them back", async () => {
  const subscription = await subscribedThroughApi(file);
  const start = Math.floor(Date.now() / 1000) - 60;
  const events = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
  // All first: an early event waits for the checkout that links the subscription.
  for (const event of events) assert.equal((await file.service.deliver(event)).status, 200);
  for (const event of events) await finishedEvent(file.database, event.id);
  assert.equal(await remaining(subscription.accountId), 100);
  const paymentIntentId = (events.find((e) => e.type === 'payment_intent.succeeded')!.data.object as { id: string }).id;
  const runId = await run(subscription.accountId, 100);
  await deliverAndFinish(
    sampleEvent(
      'charge.refunded',
      refundedCharge({ paymentIntentId, amount: subscription.amount, currency: subscription.currency, amountRefunded: subscription.amount }),
    ),
  );
  const reversed = await reverse(subscription.accountId, runId);
  assert.deepEqual([reversed.body.credits_revoked, reversed.body.remaining], [100, 0]);
  const grant = await file.database.db
    .selectFrom('invoice_grants')
    .select(['revocation_target', 'revoked_credits'])
    .where('subscription_id', '=', subscription.subscriptionId)
    .executeTakeFirstOrThrow();
  assert.deepEqual(grant, { revocation_target: 100, revoked_credits: 100 });
});
