// Disputes (chargebacks) through the webhook and the real worker, with every module: funds
// withdrawn take the order's unused credits back once, funds reinstated give back what that
// dispute took, once; whatever order Stripe's dispute events arrive in, repeated or as second
// Event objects, the credits converge on what the dispute's state says, and refunds and disputes
// of one order never take the same credits twice.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { OrderRow } from '../../../src/modules/credits/tables.js';
import { consumeCredits } from '../../../src/modules/ledger/runs.js';
import { withLedgerTables } from '../../../src/modules/ledger/tables.js';
import { disputeObject, randomStripeId, refundedCharge, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { createTestDatabase } from '../../support/database.js';
import { finishedEvent, givenOrder, paidEvent, paidOrder, quotaOf } from '../../support/factories.js';
import { serviceForFile, startTestService } from '../../support/service.js';

const file = serviceForFile();
type PaidOrder = OrderRow & { payment_intent_id: string };

/** One dispute of the order's charge; its events carry it in the status each names. */
function disputeOf(order: PaidOrder) {
  const ids = { disputeId: randomStripeId('dp'), chargeId: randomStripeId('ch') };
  const at = Math.floor(Date.now() / 1000);
  return {
    id: ids.disputeId,
    /** `minutes`: when Stripe created the event, after the dispute opened; it orders Stripe's status. */
    event: (type: string, status: string, minutes: number) =>
      sampleEvent(type, disputeObject({ paymentIntentId: order.payment_intent_id, amount: order.amount, currency: order.currency, status, ...ids }), {
        created: at + minutes * 60,
      }),
  };
}

async function deliverAndFinish(event: SampleEvent, database = file.database, service = file.service) {
  assert.equal((await service.deliver(event)).status, 200);
  return finishedEvent(database, event.id);
}

const disputeRow = (disputeId: string) =>
  withLedgerTables(file.database.db)
    .selectFrom('disputes')
    .select(['status', 'funds_withdrawn', 'funds_reinstated', 'credits_taken', 'credits_returned', 'purchase'])
    .where('dispute_id', '=', disputeId)
    .executeTakeFirstOrThrow();

/** A second order paid into the same account: what a dispute may take is the disputed order's, never this one's. */
async function secondOrderOf(account: string) {
  const order = await givenOrder(file.database, { accountId: account });
  assert.equal((await deliverAndFinish(paidEvent(order))).status, 'processed');
}

describe('a dispute of a package order', () => {
  test('withdrawn takes the unused credits back once; reinstated gives them back once; created and closed record the state', async () => {
    const order = await paidOrder(file.database, file.service);
    for (let i = 0; i < 10; i++) assert.ok(await consumeCredits(file.database.db, order.account_id, 1));
    const dispute = disputeOf(order);

    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.created', 'needs_response', 0))).status, 'processed');
    assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 40, used: 10, remaining: 30 });

    const withdrawn = dispute.event('charge.dispute.funds_withdrawn', 'needs_response', 1);
    assert.equal((await deliverAndFinish(withdrawn)).status, 'processed');
    // The used credits stay used: what was left, 30, is taken back, and quota is 0, never below.
    assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 10, used: 10, remaining: 0 });
    // Stripe's retry, and a second Event object for the same withdrawal: nothing more.
    assert.deepEqual((await file.service.deliver(withdrawn)).body, { received: true, duplicate: true });
    assert.equal((await deliverAndFinish(sampleEvent(withdrawn.type, withdrawn.data.object, { created: withdrawn.created }))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 10);
    // The dashboard shows the order beside the dispute's event, found by the PaymentIntent it names.
    const records = (await file.service.call('GET', `/admin/api/events/${withdrawn.id}`)).body.records as Array<{ kind: string; id: string }>;
    assert.deepEqual(
      records.map((r) => [r.kind, r.id]),
      [['order', order.order_id]],
    );

    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.updated', 'under_review', 2))).status, 'processed');
    const reinstated = dispute.event('charge.dispute.funds_reinstated', 'won', 3);
    assert.equal((await deliverAndFinish(reinstated)).status, 'processed');
    assert.equal((await deliverAndFinish(sampleEvent(reinstated.type, reinstated.data.object, { created: reinstated.created }))).status, 'processed');
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.closed', 'won', 4))).status, 'processed');
    assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 40, used: 10, remaining: 30 });
    assert.deepEqual(await disputeRow(dispute.id), {
      status: 'won',
      funds_withdrawn: true,
      funds_reinstated: true,
      credits_taken: 30,
      credits_returned: 30,
      purchase: `order:${order.order_id}`,
    });
  });

  test('reinstated before withdrawn: nothing is ever taken, and the older event does not overwrite the status', async () => {
    const order = await paidOrder(file.database, file.service);
    const dispute = disputeOf(order);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.funds_reinstated', 'won', 3))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 40);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.funds_withdrawn', 'needs_response', 1))).status, 'processed');
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.created', 'needs_response', 0))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 40);
    assert.deepEqual(await disputeRow(dispute.id), {
      status: 'won',
      funds_withdrawn: true,
      funds_reinstated: true,
      credits_taken: 0,
      credits_returned: 0,
      purchase: `order:${order.order_id}`,
    });
  });

  test('a lost dispute after a partial refund takes the rest; the refund that completes the order then takes nothing twice', async () => {
    const order = await paidOrder(file.database, file.service);
    await secondOrderOf(order.account_id);
    const refund = (amountRefunded: number) =>
      sampleEvent(
        'charge.refunded',
        refundedCharge({ paymentIntentId: order.payment_intent_id, amount: order.amount, currency: order.currency, amountRefunded, orderId: order.order_id }),
      );
    // REFUND_POLICY=full: a partial refund takes nothing back.
    assert.equal((await deliverAndFinish(refund(1000))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 80);

    const dispute = disputeOf(order);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.funds_withdrawn', 'needs_response', 1))).status, 'processed');
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.closed', 'lost', 2))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 40, "the disputed order's 40, not the other order's");

    assert.equal((await deliverAndFinish(refund(order.amount))).status, 'processed');
    assert.deepEqual(await quotaOf(file.database, order.account_id), { account_id: order.account_id, granted: 40, used: 0, remaining: 40 });
    assert.deepEqual(await disputeRow(dispute.id), {
      status: 'lost',
      funds_withdrawn: true,
      funds_reinstated: false,
      credits_taken: 40,
      credits_returned: 0,
      purchase: `order:${order.order_id}`,
    });
  });

  test('a dispute of a fully refunded order takes nothing more, and its reinstatement gives nothing back', async () => {
    const order = await paidOrder(file.database, file.service);
    await secondOrderOf(order.account_id);
    const refund = sampleEvent(
      'charge.refunded',
      refundedCharge({
        paymentIntentId: order.payment_intent_id,
        amount: order.amount,
        currency: order.currency,
        amountRefunded: order.amount,
        orderId: order.order_id,
      }),
    );
    assert.equal((await deliverAndFinish(refund)).status, 'processed');
    const dispute = disputeOf(order);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.funds_withdrawn', 'needs_response', 1))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 40);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.funds_reinstated', 'won', 2))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 40, 'the refund still holds its credits back');
  });

  test('a dispute closed lost, whose funds_withdrawn never arrived, takes the credits back', async () => {
    const order = await paidOrder(file.database, file.service);
    const dispute = disputeOf(order);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.closed', 'lost', 5))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
    assert.equal((await deliverAndFinish(dispute.event('charge.dispute.funds_withdrawn', 'needs_response', 1))).status, 'processed');
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
    assert.equal((await disputeRow(dispute.id)).status, 'lost');
  });
});

describe("another sale's dispute ends 'ignored' at once, with every module's reason", () => {
  async function ignoredAtOnce(event: SampleEvent, reason: RegExp) {
    const row = await deliverAndFinish(event);
    assert.deepEqual([row.status, row.attempts], ['ignored', 0], `${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
    assert.match(row.last_error ?? '', reason);
  }

  test('a PaymentIntent no order or invoice of ours names', async () => {
    const dispute = disputeObject({ paymentIntentId: randomStripeId('pi'), amount: 2500, currency: 'usd', status: 'needs_response' });
    for (const type of ['charge.dispute.created', 'charge.dispute.funds_withdrawn']) {
      await ignoredAtOnce(
        sampleEvent(type, dispute),
        /^dispute dp_\S+: no order paid by payment intent pi_\S+, and none is being paid; dispute dp_\S+: no granted invoice paid by payment intent pi_\S+, and none is being paid$/,
      );
    }
  });

  test("Stripe's example dispute, of a charge without a PaymentIntent", async () => {
    await ignoredAtOnce(
      sampleEvent('charge.dispute.created', disputeObject({ paymentIntentId: null, amount: 1000, currency: 'usd', status: 'warning_needs_response' })),
      /charge ch_\S+ has no PaymentIntent/,
    );
  });
});

test('DISPUTE_POLICY=ignore records the dispute and takes nothing', async () => {
  const other = await createTestDatabase();
  const ignoring = await startTestService(other, { env: { DISPUTE_POLICY: 'ignore' } });
  try {
    const order = await givenOrder(other);
    const payment = paidEvent(order);
    assert.equal((await deliverAndFinish(payment, other, ignoring)).status, 'processed');
    const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
    const dispute = disputeObject({ paymentIntentId, amount: order.amount, currency: order.currency, status: 'needs_response' });
    assert.equal((await deliverAndFinish(sampleEvent('charge.dispute.funds_withdrawn', dispute), other, ignoring)).status, 'processed');
    assert.equal((await quotaOf(other, order.account_id)).granted, 40);
    const row = await withLedgerTables(other.db)
      .selectFrom('disputes')
      .select(['funds_withdrawn', 'credits_taken'])
      .where('dispute_id', '=', dispute.id as string)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { funds_withdrawn: true, credits_taken: 0 });
  } finally {
    await ignoring.close();
    await other.close();
  }
});
