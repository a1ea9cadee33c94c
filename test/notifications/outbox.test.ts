// One notification per outcome, written in the outcome's transaction (docs/notifications.md,
// guarantee 1): whatever repeats the event that made it — Stripe's retry, a second Event object, a
// replay — the app is told once; a fulfilment rolled back tells it nothing; with APP_WEBHOOK_URL
// unset nothing is written. Each type carries its fields, the account's balance right after the
// outcome and the account's sequence.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { PERIOD_SECONDS, periodEvents } from '../../src/modules/billing/sample-events.js';
import { creditsModule } from '../../src/modules/credits/index.js';
import { refundedCharge, sampleEvent } from '../../src/stripe/sample-events.js';
import { databaseForFile } from '../support/database.js';
import { finishedEvent, givenOrder, paidEvent, paidOrder } from '../support/factories.js';
import { fulfilWith, handlersOf } from '../support/handlers.js';
import { APP_WEBHOOK_SECRET, notifyingServiceForFile, receivedWhere } from '../support/notification-receiver.js';
import { subscribedThroughApi } from '../support/subscriptions.js';
import { waitFor } from '../support/wait-for.js';

/** No worker: the outbox's rows stay as the fulfilment transaction left them. */
const quiet = databaseForFile();
const NOTIFYING = { APP_WEBHOOK_URL: 'http://127.0.0.1:9/one,http://127.0.0.1:9/two', APP_WEBHOOK_SECRET };

const notificationsOf = (db: typeof quiet.db, key: string) =>
  db.selectFrom('notifications').selectAll().where('business_key', 'like', key).orderBy('sequence').execute();

describe('in the outcome’s transaction', () => {
  test('a grant writes one notification and one delivery per endpoint, due at once', async () => {
    const order = await givenOrder(quiet);
    const [fulfilled] = await fulfilWith(quiet, handlersOf(creditsModule, NOTIFYING), [paidEvent(order)]);
    assert.equal(fulfilled!.row.status, 'processed');
    const [notification, ...more] = await notificationsOf(quiet.db, `order.paid:${order.order_id}`);
    assert.equal(more.length, 0);
    assert.equal(notification!.event_id, fulfilled!.row.event_id);
    const deliveries = await quiet.db
      .selectFrom('notification_deliveries')
      .select(['endpoint', 'status', 'attempts', sql<boolean>`next_attempt_at <= now() and leased_until is null`.as('due')])
      .where('notification_id', '=', notification!.notification_id)
      .orderBy('delivery_id')
      .execute();
    assert.deepEqual(deliveries, [
      { endpoint: 'http://127.0.0.1:9/one', status: 'pending', attempts: 0, due: true },
      { endpoint: 'http://127.0.0.1:9/two', status: 'pending', attempts: 0, due: true },
    ]);
  });

  test('two grants to one account in one batch are numbered in turn, each with the balance right after it', async () => {
    const first = await givenOrder(quiet);
    const second = await givenOrder(quiet, { accountId: first.account_id });
    await fulfilWith(quiet, handlersOf(creditsModule, NOTIFYING), [paidEvent(first), paidEvent(second)]);
    const bodies = (await notificationsOf(quiet.db, 'order.paid:%'))
      .filter((n) => n.account_id === first.account_id)
      .map((n) => JSON.parse(n.body) as { data: { order_id: string; sequence: number; balance: unknown } });
    assert.deepEqual(
      bodies.map((b) => [b.data.order_id, b.data.sequence, b.data.balance]),
      [
        [first.order_id, 1, { granted: 40, used: 0, remaining: 40 }],
        [second.order_id, 2, { granted: 80, used: 0, remaining: 80 }],
      ],
    );
  });

  test('a fulfilment rolled back writes none', async () => {
    const order = await givenOrder(quiet);
    // A second module acting on the same type fails after the credits module granted and notified.
    const failing = { 'checkout.session.completed': () => Promise.reject(new Error('the connection went away')) };
    const [fulfilled] = await fulfilWith(quiet, [handlersOf(creditsModule, NOTIFYING), failing], [paidEvent(order)]);
    assert.equal(fulfilled!.row.status, 'processing', 'the attempt failed and will be retried');
    assert.deepEqual(await notificationsOf(quiet.db, `order.paid:${order.order_id}`), []);
    const { rows } = await sql<{ notified: number }>`select notified from account_credits where account_id = ${order.account_id}`.execute(quiet.db);
    assert.deepEqual(rows, [], 'nothing of the account was written either');
  });

  test('with APP_WEBHOOK_URL unset, none is written and no sequence is taken', async () => {
    const order = await givenOrder(quiet);
    const [fulfilled] = await fulfilWith(quiet, handlersOf(creditsModule), [paidEvent(order)]);
    assert.equal(fulfilled!.row.status, 'processed');
    assert.deepEqual(await notificationsOf(quiet.db, `order.paid:${order.order_id}`), []);
    const { rows } = await sql<{ notified: number }>`select notified from account_credits where account_id = ${order.account_id}`.execute(quiet.db);
    assert.deepEqual(rows, [{ notified: 0 }]);
  });
});

describe('through the service, to a receiver', () => {
  const file = notifyingServiceForFile();

  test('Stripe’s retry, a second Event object and a replay of the event tell the app once', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    await file.service.deliver(event);
    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    assert.equal((await file.service.deliver(event)).status, 200, 'the retry');
    const second = paidEvent(order);
    await file.service.deliver(second);
    assert.equal((await finishedEvent(file.database, second.id)).status, 'duplicate');
    assert.equal((await file.service.call('POST', `/admin/api/events/${event.id}/replay`)).status, 202);
    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');

    await waitFor(
      'the notification',
      receivedWhere(file.receiver, (r) => r.data.order_id === order.order_id),
    );
    assert.equal((await notificationsOf(file.database.db, `order.paid:${order.order_id}`)).length, 1);
    // Every delivery of this file's notifications is done, so nothing more is on its way.
    await waitFor(
      'every delivery done',
      async () => (await file.database.db.selectFrom('notification_deliveries').select('status').where('status', '<>', 'delivered').execute()).length === 0,
    );
    assert.equal(file.receiver.received.filter((r) => r.data.order_id === order.order_id).length, 1);
  });

  test('a refund: order.refunded with the credits taken back, once per amount refunded', async () => {
    const order = await paidOrder(file.database, file.service);
    const refund = (amount: number) =>
      sampleEvent(
        'charge.refunded',
        refundedCharge({ paymentIntentId: order.payment_intent_id, amount: order.amount, currency: order.currency, amountRefunded: amount }),
      );
    for (const event of [refund(1000), refund(1000), refund(order.amount)]) {
      await file.service.deliver(event);
      assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    }
    const told = await waitFor(
      'two order.refunded',
      receivedWhere(file.receiver, (r) => r.type === 'order.refunded' && r.data.order_id === order.order_id, 2),
    );
    assert.deepEqual(
      told.map((r) => r.data).sort((a, b) => Number(a.sequence) - Number(b.sequence)),
      [
        // Stripe's example charge lists no refund (API versions since 2022-11-15 do not expand them).
        {
          account_id: order.account_id,
          order_id: order.order_id,
          refund_id: null,
          credits_revoked: 0,
          amount_refunded: 1000,
          balance: { granted: 40, used: 0, remaining: 40 },
          sequence: 2,
        },
        {
          account_id: order.account_id,
          order_id: order.order_id,
          refund_id: null,
          credits_revoked: 40,
          amount_refunded: order.amount,
          balance: { granted: 0, used: 0, remaining: 0 },
          sequence: 3,
        },
      ],
    );
  });

  test('a subscription’s first period: subscription.updated as its state changes, subscription.period_paid once, and its refund', async () => {
    const subscription = await subscribedThroughApi(file);
    const start = Math.floor(Date.now() / 1000) - 60;
    const events = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS });
    for (const event of [...events, ...events]) await file.service.deliver(event);
    for (const event of events) await finishedEvent(file.database, event.id);
    const paidInvoice = events.find((e) => e.type === 'invoice.paid')!.data.object as {
      id: string;
      lines: { data: Array<{ period: { start: number; end: number } }> };
    };
    const [paid] = await waitFor(
      'subscription.period_paid',
      receivedWhere(file.receiver, (r) => r.type === 'subscription.period_paid' && r.data.subscription_id === subscription.subscriptionId),
    );
    assert.deepEqual(paid!.data, {
      account_id: subscription.accountId,
      subscription_id: subscription.subscriptionId,
      invoice_id: paidInvoice.id,
      period_start: new Date(paidInvoice.lines.data[0]!.period.start * 1000).toISOString(),
      period_end: new Date(paidInvoice.lines.data[0]!.period.end * 1000).toISOString(),
      credits: 100,
      balance: { granted: 100, used: 0, remaining: 100 },
      sequence: paid!.data.sequence,
    });
    const updates = await waitFor(
      'the active state',
      receivedWhere(
        file.receiver,
        (r) => r.type === 'subscription.updated' && r.data.subscription_id === subscription.subscriptionId && r.data.status === 'active',
      ),
    );
    assert.deepEqual(updates[0]!.data, {
      account_id: subscription.accountId,
      subscription_id: subscription.subscriptionId,
      status: 'active',
      current_period_end: new Date((start + PERIOD_SECONDS) * 1000).toISOString(),
      cancel_at_period_end: false,
      pause_collection: null,
      balance: updates[0]!.data.balance,
      sequence: updates[0]!.data.sequence,
    });
    const all = file.receiver.unique().filter((r) => r.data.account_id === subscription.accountId);
    assert.equal(all.filter((r) => r.type === 'subscription.period_paid').length, 1, 'every event twice: one period_paid');
    assert.deepEqual(
      all.map((r) => r.data.sequence).sort(),
      Array.from({ length: all.length }, (_, i) => i + 1),
      'sequence counts every notification of the account',
    );

    const payment = events.find((e) => e.type === 'invoice_payment.paid')!.data.object as { payment: { payment_intent: string } };
    const refund = sampleEvent(
      'charge.refunded',
      refundedCharge({
        paymentIntentId: payment.payment.payment_intent,
        amount: subscription.amount,
        currency: subscription.currency,
        amountRefunded: subscription.amount,
      }),
    );
    await file.service.deliver(refund);
    assert.equal((await finishedEvent(file.database, refund.id)).status, 'processed');
    const [refunded] = await waitFor(
      'subscription.period_refunded',
      receivedWhere(file.receiver, (r) => r.type === 'subscription.period_refunded' && r.data.subscription_id === subscription.subscriptionId),
    );
    assert.deepEqual(refunded!.data, {
      account_id: subscription.accountId,
      subscription_id: subscription.subscriptionId,
      invoice_id: paidInvoice.id,
      refund_id: null,
      credits_revoked: 100,
      amount_refunded: subscription.amount,
      balance: { granted: 0, used: 0, remaining: 0 },
      sequence: all.length + 1,
    });
  });
});
