// A paid Checkout Session pays only the order that stored its id when POST /api/checkout opened it
// (src/modules/credits/order-payment.ts). metadata.order_id is anyone's to write in the Stripe
// account: it has to agree with that order, and never finds one on its own. What an error quotes
// of the merchant's metadata is capped and escaped.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recordOrderPayments, type OrderPayment } from '../../../src/modules/credits/order-payment.js';
import { waker } from '../../../src/events/event-waits.js';
import { attachCheckoutSession, createOrder } from '../../../src/modules/credits/orders.js';
import type { OrderRow } from '../../../src/modules/credits/tables.js';
import { checkoutSession, randomStripeId, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import {
  finishedEvent,
  givenOrder,
  grantsOf,
  newAccountId,
  orderRow,
  paidEvent,
  quotaOf,
  waitingEvent,
  refusedAtOnce as refusedAtOnceIn,
} from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';

// graphile-worker retries after e^1 ≈ 2.7 s, found by a poll every 2 s (src/worker/runners.ts).
const RETRY_TIMEOUT_MS = 20_000;

const file = serviceForFile();

async function delivered(event: SampleEvent) {
  assert.equal((await file.service.deliver(event)).status, 200);
  return event;
}

const refusedAtOnce = (event: SampleEvent, ids: readonly string[]) => refusedAtOnceIn(file.database, event.id, ids);

async function assertUnpaid(...orders: OrderRow[]) {
  for (const order of orders) {
    assert.equal((await orderRow(file.database, order.order_id)).status, 'pending');
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
    assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
  }
}

describe('a paid session whose metadata disagrees with the order that stored it is refused', () => {
  test('the session P stored, its metadata naming Q: failed with the session and both orders, neither paid', async () => {
    const [p, q] = [await givenOrder(file.database), await givenOrder(file.database)];
    const event = await delivered(paidEvent(q, { sessionId: p.checkout_session_id! }));
    const row = await refusedAtOnce(event, [p.checkout_session_id!, p.order_id, q.order_id]);
    assert.match(row.last_error!, /: refused$/);
    await assertUnpaid(p, q);
  });

  test('a session no order stored, naming O, which stored another: failed with both session ids, O unpaid', async () => {
    const order = await givenOrder(file.database);
    const stray = randomStripeId('cs');
    const event = await delivered(paidEvent(order, { sessionId: stray }));
    await refusedAtOnce(event, [stray, order.checkout_session_id!, order.order_id]);
    await assertUnpaid(order);
  });
});

test('a session naming an order that has stored no session id waits, and pays it once the retried POST stores that id', async () => {
  // As POST /api/checkout leaves the order when it dies between Stripe's answer and storing the id.
  const order = (await createOrder(file.database.db, { packageId: 'starter', accountId: newAccountId(), email: null }))!;
  const sessionId = randomStripeId('cs');
  const event = await delivered(paidEvent(order, { sessionId }));
  const waiting = await waitingEvent(file.database, event.id);
  assert.match(waiting.last_error ?? '', new RegExp(`names order "${order.order_id}" .*waiting for the Checkout Session id`));
  await assertUnpaid(order);

  await attachCheckoutSession(file.database.db, order.order_id, sessionId, waker({ maxAttempts: 10 }));
  assert.equal((await finishedEvent(file.database, event.id, { timeoutMs: RETRY_TIMEOUT_MS })).status, 'processed');
  assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
});

test('the session an order stored pays it even when its metadata names no order: the link decides, not the metadata', async () => {
  const order = await givenOrder(file.database);
  const event = paidEvent(order);
  const withoutMetadata = { ...event, data: { object: { ...event.data.object, metadata: {} } } };
  assert.equal((await finishedEvent(file.database, (await delivered(withoutMetadata)).id)).status, 'processed');
  assert.equal((await orderRow(file.database, order.order_id)).status, 'paid');
});

test('a paid session that no order opened and whose metadata names none is not ours: ignored with the reason, nothing granted', async () => {
  const event = sampleEvent('checkout.session.completed', { ...checkoutSession({ orderId: 'unused', amount: 1900, currency: 'chf' }), metadata: {} });
  const row = await finishedEvent(file.database, (await delivered(event)).id);
  assert.equal(row.status, 'ignored');
  assert.match(row.last_error ?? '', /not started by POST \/api\/checkout/);
});

test("an error quotes at most 80 characters of a merchant's metadata value, escaped: a 500-character order id cannot fill last_error or forge a line", async () => {
  const orderId = `ord_${'7'.repeat(60)}\n${'x'.repeat(435)}`;
  assert.equal(orderId.length, 500);
  const event = await delivered(sampleEvent('checkout.session.completed', checkoutSession({ orderId, amount: 4900, currency: 'chf' })));
  const row = await finishedEvent(file.database, event.id);
  assert.equal(row.status, 'failed');
  const quoted = `"${JSON.stringify(orderId.slice(0, 80)).slice(1, -1)}…"`;
  assert.ok(row.last_error!.startsWith(`unknown order ${quoted} in checkout session `), row.last_error!);
  assert.ok(row.last_error!.length < 160, `${row.last_error!.length} characters`);
  assert.ok(!row.last_error!.includes('\n'));
});

test('one statement resolves each payment of a batch against the order that stored its session', async () => {
  const [paying, named, waiting, other] = [
    await givenOrder(file.database),
    await givenOrder(file.database),
    (await createOrder(file.database.db, { packageId: 'starter', accountId: newAccountId(), email: null }))!,
    await givenOrder(file.database),
  ];
  const payment = (orderId: string | null, checkoutSessionId: string): OrderPayment => ({
    orderId,
    eventId: randomStripeId('evt'),
    amount: 4900,
    currency: 'chf',
    checkoutSessionId,
    paymentIntentId: randomStripeId('pi'),
  });
  const payments = [
    payment(named.order_id, other.checkout_session_id!),
    payment(named.order_id, randomStripeId('cs')),
    payment(waiting.order_id, randomStripeId('cs')),
    payment('ord_test_unknown', randomStripeId('cs')),
    payment(null, randomStripeId('cs')),
    payment(paying.order_id, paying.checkout_session_id!),
  ];
  const results = await file.database.db.transaction().execute((tx) => recordOrderPayments(tx, payments));
  assert.deepEqual(results, [
    { outcome: 'order_mismatch', orderId: other.order_id },
    { outcome: 'session_mismatch', storedSessionId: named.checkout_session_id },
    { outcome: 'session_not_stored' },
    { outcome: 'unknown_order' },
    { outcome: 'no_order' },
    { outcome: 'granted', grant: { orderId: paying.order_id, accountId: paying.account_id, packageId: 'starter', credits: 40, amount: 4900, currency: 'chf' } },
  ]);
  assert.equal((await orderRow(file.database, paying.order_id)).status, 'paid');
  await assertUnpaid(named, waiting, other);
});
