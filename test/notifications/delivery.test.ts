// Delivering outcome notifications to the app (docs/notifications.md): the real service and worker
// against a real HTTP receiver that verifies every request with the `standardwebhooks` package.
// At least once to every endpoint until a 2xx or the attempts run out; the same webhook-id and
// the same bytes on every attempt; a dead letter replayed as it was; a slow app holds nothing else.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { finishedEvent, givenOrder, paidEvent } from '../support/factories.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { notifyingTo, startNotificationReceiver, type NotificationReceiver } from '../support/notification-receiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

interface Setup {
  database: TestDatabase;
  receiver: NotificationReceiver;
  service: TestService;
}

/** A database, a receiver and the service notifying it, for one describe block. */
function notifyingService(env: Record<string, string> = {}): Setup {
  const setup = {} as Setup;
  before(async () => {
    setup.database = await createTestDatabase();
    setup.receiver = await startNotificationReceiver();
    setup.service = await startTestService(setup.database, { env: notifyingTo(setup.receiver, env) });
  });
  after(async () => {
    await setup.service?.close();
    await setup.receiver?.close();
    await setup.database?.close();
  });
  return setup;
}

const deliveryOf = (setup: Setup, notificationId: string) =>
  setup.database.db.selectFrom('notification_deliveries').selectAll().where('notification_id', '=', notificationId).executeTakeFirstOrThrow();

const notificationOfOrder = (setup: Setup, orderId: string) =>
  waitFor(`the order.paid notification of ${orderId}`, () =>
    setup.database.db.selectFrom('notifications').selectAll().where('business_key', '=', `order.paid:${orderId}`).executeTakeFirst(),
  );

/** Pays a new order through the webhook and returns it once its event is processed. */
async function paid(setup: Setup, accountId?: string) {
  const order = await givenOrder(setup.database, accountId === undefined ? {} : { accountId });
  const event = paidEvent(order);
  assert.equal((await setup.service.deliver(event)).status, 200);
  assert.equal((await finishedEvent(setup.database, event.id)).status, 'processed');
  return { order, event };
}

describe('a paid order is told to the app', () => {
  const setup = notifyingService();

  test('as one signed order.paid, verified by standardwebhooks, with the balance and sequence after the grant', async () => {
    const { order, event } = await paid(setup);
    const [received] = await waitFor('the notification', async () => (setup.receiver.unique().some((r) => r.data.order_id === order.order_id) ? setup.receiver.unique().filter((r) => r.data.order_id === order.order_id) : undefined));
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
