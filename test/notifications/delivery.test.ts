// Delivering outcome notifications to the app (docs/notifications.md): the real service and worker
// against a real HTTP receiver that verifies every request with the `standardwebhooks` package.
// At least once to every endpoint until a 2xx or the attempts run out; the same webhook-id and
// the same bytes on every attempt; a dead letter replayed as it was; a slow app holds nothing else.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DELIVERIES_PER_BATCH } from '../../src/notifications/delivery-pump.js';
import { finishedEvent, givenOrder, paidEvent } from '../support/factories.js';
import { notifyingServiceForFile, receivedWhere, type NotifyingFile } from '../support/notification-receiver.js';
import { waitFor } from '../support/wait-for.js';

type Setup = NotifyingFile;

const deliveryOf = (setup: Setup, notificationId: string) =>
  setup.database.db.selectFrom('notification_deliveries').selectAll().where('notification_id', '=', notificationId).executeTakeFirstOrThrow();

/** Pays a new order through the webhook and returns it once its event is processed. */
async function paid(setup: Setup, accountId?: string) {
  const order = await givenOrder(setup.database, accountId === undefined ? {} : { accountId });
  const event = paidEvent(order);
  assert.equal((await setup.service.deliver(event)).status, 200);
  assert.equal((await finishedEvent(setup.database, event.id)).status, 'processed');
  return { order, event };
}

describe('a paid order is told to the app', () => {
  const setup = notifyingServiceForFile();

  test('as one signed order.paid, verified by standardwebhooks, with the balance and sequence after the grant', async () => {
    const { order, event } = await paid(setup);
    const [received] = await waitFor(
      'the notification',
      receivedWhere(setup.receiver, (r) => r.data.order_id === order.order_id),
    );
    assert.ok(received!.verified);
    assert.equal(received!.type, 'order.paid');
    assert.match(received!.id, /^msg_/);
    assert.ok(Math.abs(received!.timestamp - Date.now() / 1000) < 60, 'webhook-timestamp is this attempt’s Unix time');
    assert.match(received!.signature, /^v1,[A-Za-z0-9+/=]+$/);
    assert.deepEqual(received!.data, {
      account_id: order.account_id,
      order_id: order.order_id,
      package_id: 'starter',
      credits: order.credits,
      amount: order.amount,
      currency: order.currency,
      stripe_event_id: event.id,
      checkout_session_id: order.checkout_session_id,
      balance: { granted: order.credits, used: 0, remaining: order.credits },
      sequence: 1,
    });
    const body = JSON.parse(received!.body) as { type: string; timestamp: string };
    assert.equal(body.type, 'order.paid');
    assert.ok(!Number.isNaN(Date.parse(body.timestamp)));
    const delivery = await waitFor('the delivery recorded', async () => {
      const d = await deliveryOf(setup, received!.id);
      return d.status === 'delivered' ? d : undefined;
    });
    assert.equal(delivery.attempts, 1);
    assert.equal(delivery.last_status_code, 204);
  });
});

const attemptsOf = (setup: Setup, notificationId: string) =>
  setup.database.db
    .selectFrom('notification_attempts as a')
    .innerJoin('notification_deliveries as d', 'd.delivery_id', 'a.delivery_id')
    .select(['a.status_code', 'a.error'])
    .where('d.notification_id', '=', notificationId)
    .orderBy('a.started_at')
    .execute();

const settled = (setup: Setup, notificationId: string, status: 'delivered' | 'failed', timeoutMs = 10_000) =>
  waitFor(
    `the delivery of ${notificationId} ${status}`,
    async () => {
      const delivery = await deliveryOf(setup, notificationId);
      return delivery.status === status && delivery;
    },
    { timeoutMs },
  );

describe('an app that fails, then recovers', () => {
  const setup = notifyingServiceForFile();

  test('is sent the same webhook-id and the same bytes again after a backoff, until it answers 2xx', async () => {
    const failedOnce = new Set<string>();
    setup.receiver.answer = (request) => (failedOnce.has(request.id) ? { status: 200 } : (failedOnce.add(request.id), { status: 503, body: 'maintenance' }));
    const { order } = await paid(setup);
    // The first retry waits 10 s ± 20 % (src/notifications/backoff.ts).
    const [told] = await waitFor(
      'the notification',
      receivedWhere(setup.receiver, (r) => r.data.order_id === order.order_id),
    );
    const delivery = await settled(setup, told!.id, 'delivered', 30_000);
    const requests = setup.receiver.received.filter((r) => r.id === told!.id);
    assert.deepEqual(
      requests.map((r) => [r.verified, r.answered]),
      [
        [true, 503],
        [true, 200],
      ],
    );
    assert.equal(requests[0]!.body, requests[1]!.body, 'byte-identical bodies');
    assert.ok(requests[1]!.timestamp - requests[0]!.timestamp >= 7, 'each attempt signs its own timestamp, after the backoff');
    assert.equal(delivery.attempts, 2);
    assert.deepEqual(await attemptsOf(setup, told!.id), [
      { status_code: 503, error: 'HTTP 503: "maintenance"' },
      { status_code: 200, error: null },
    ]);
  });

  test('a redirect is not a delivery, and 410 Gone ends the delivery at once, as failed', async () => {
    setup.receiver.answer = () => ({ status: 410 });
    const gone = await paid(setup);
    const [told] = await waitFor(
      'the notification',
      receivedWhere(setup.receiver, (r) => r.data.order_id === gone.order.order_id),
    );
    const failed = await settled(setup, told!.id, 'failed');
    assert.deepEqual([failed.attempts, failed.last_status_code, failed.last_error], [1, 410, 'HTTP 410 (410 Gone: not retried)']);

    setup.receiver.answer = () => ({ status: 301, body: '' });
    const moved = await paid(setup);
    const [redirected] = await waitFor(
      'the notification',
      receivedWhere(setup.receiver, (r) => r.data.order_id === moved.order.order_id),
    );
    const pending = await waitFor('the redirect recorded', async () => {
      const d = await deliveryOf(setup, redirected!.id);
      return d.attempts === 1 && d.leased_until === null && d;
    });
    assert.deepEqual([pending.status, pending.last_status_code], ['pending', 301]);
  });
});

describe('a dead letter', () => {
  const setup = notifyingServiceForFile({ APP_WEBHOOK_MAX_ATTEMPTS: '1' });

  test('is failed with its last status and a bounded error, listed and counted, and replayed as it was', async () => {
    // A megabyte of error page: read only up to a small limit, quoted short in the error.
    setup.receiver.answer = () => ({ status: 500, body: `<html>${'x'.repeat(1024 * 1024)}</html>` });
    const { order } = await paid(setup);
    const [told] = await waitFor(
      'the notification',
      receivedWhere(setup.receiver, (r) => r.data.order_id === order.order_id),
    );
    const failed = await settled(setup, told!.id, 'failed');
    assert.equal(failed.last_status_code, 500);
    assert.match(failed.last_error!, /^HTTP 500: "<html>x+…"$/);
    assert.ok(failed.last_error!.length < 120, `a bounded error (${failed.last_error!.length} characters)`);

    const list = await setup.service.call('GET', '/admin/api/notifications?status=failed');
    assert.equal(list.status, 200);
    const listed = (
      list.body as unknown as Array<{
        notification_id: string;
        type: string;
        deliveries: Array<{ status: string; last_status_code: number; attempt_log: unknown[] }>;
      }>
    ).find((n) => n.notification_id === told!.id);
    assert.deepEqual(
      [listed?.type, listed?.deliveries[0]?.status, listed?.deliveries[0]?.last_status_code, listed?.deliveries[0]?.attempt_log.length],
      ['order.paid', 'failed', 500, 1],
    );
    const status = await setup.service.call('GET', '/admin/api/status');
    assert.deepEqual(status.body.notifications, {
      enabled: true,
      endpoints: [{ endpoint: setup.receiver.url, pending: 0, failed: 1, oldest_pending_age_seconds: null }],
    });
    const metrics = await fetch(`${setup.service.url}/metrics`, { headers: { authorization: `Bearer ${setup.service.config.metricsToken}` } }).then((r) =>
      r.text(),
    );
    assert.match(metrics, new RegExp(`stripe_inbox_notifications\\{endpoint="${setup.receiver.url}",status="failed"\\} 1`));
    assert.match(metrics, new RegExp(`stripe_inbox_notification_deliveries_total\\{endpoint="${setup.receiver.url}",type="order.paid",outcome="failed"\\} 1`));

    setup.receiver.answer = () => ({ status: 204 });
    const replay = await setup.service.call('POST', '/admin/api/notifications/replay', { body: { ids: [told!.id, 'msg_unknown'] } });
    assert.deepEqual([replay.status, replay.body], [202, { replayed: [told!.id], skipped: ['msg_unknown'] }]);
    await settled(setup, told!.id, 'delivered');
    const requests = setup.receiver.received.filter((r) => r.id === told!.id);
    assert.deepEqual(
      requests.map((r) => r.answered),
      [500, 204],
    );
    assert.equal(requests[0]!.body, requests[1]!.body, 'the same body, under the same webhook-id');

    const refused = await setup.service.call('POST', '/admin/api/notifications/replay', { body: { ids: ['not an id'] } });
    assert.equal(refused.status, 400);
    assert.match(String(refused.body.error), /must be a notification id/);
  });
});

describe('a hanging app', () => {
  // Long enough that fulfilment would visibly wait if it shared anything with the deliveries.
  const setup = notifyingServiceForFile({ APP_WEBHOOK_TIMEOUT_SECONDS: '30', APP_WEBHOOK_CONCURRENCY: '2' });

  test('never delays a webhook’s answer or another event’s fulfilment, and its backlog is visible', async () => {
    setup.receiver.answer = () => 'hang';
    const orders = await Promise.all(Array.from({ length: 12 }, () => givenOrder(setup.database)));
    const events = orders.map((order) => paidEvent(order));
    const answers = await Promise.all(events.map((event) => setup.service.deliver(event)));
    assert.deepEqual(
      answers.map((a) => a.status),
      events.map(() => 200),
    );
    for (const event of events) assert.equal((await finishedEvent(setup.database, event.id)).status, 'processed');
    // Two batches at once (APP_WEBHOOK_CONCURRENCY), each sending its deliveries together.
    await waitFor('the deliveries hanging', () => Promise.resolve(setup.receiver.received.filter((r) => r.answered === 'hung').length >= 2));
    const status = await setup.service.call('GET', '/admin/api/status');
    const [endpoint] = (status.body.notifications as { endpoints: Array<{ pending: number }> }).endpoints;
    assert.equal(endpoint!.pending, 12, 'every notification waits, in view');
    assert.ok(
      setup.receiver.received.length <= 2 * DELIVERIES_PER_BATCH,
      `no more at once than APP_WEBHOOK_CONCURRENCY batches hold (${setup.receiver.received.length})`,
    );
    setup.receiver.dropHanging();
  });
});
