// The receiving app of docs/notifications.md, docs/examples/notification-receiver.ts, run for real
// against the service: it verifies with standardwebhooks, records the webhook-id and its effect in
// one transaction, so a replayed notification (same webhook-id, same body) changes nothing, and a
// request that does not verify is refused before anything is written.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { startReceiver, type Receiver } from '../../docs/examples/notification-receiver.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, paidEvent } from '../support/factories.js';
import { APP_WEBHOOK_SECRET } from '../support/notification-receiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

describe('the example receiver', () => {
  let database: TestDatabase;
  let receiver: Receiver;
  let service: TestService;
  before(async () => {
    // The app's three tables beside the service's, in the one throwaway database.
    database = await createTestDatabase();
    receiver = await startReceiver({ port: 0, databaseUrl: database.url, secrets: [APP_WEBHOOK_SECRET] });
    service = await startTestService(database, { env: { APP_WEBHOOK_URL: receiver.url, APP_WEBHOOK_SECRET } });
  });
  after(async () => {
    await service?.close();
    await receiver?.close();
    await database?.close();
  });

  const rows = async <T>(text: string, values: unknown[] = []) => (await database.pool.query(text, values)).rows as T[];
  const counts = async () =>
    (
      await rows<{ processed: number; accounts: number; receipts: number }>(
        `select (select count(*)::int from processed_notifications) as processed,
              (select count(*)::int from app_accounts) as accounts,
              (select count(*)::int from receipt_emails) as receipts`,
      )
    )[0]!;
  const deliveryOf = async (notificationId: string) =>
    (
      await rows<{ status: string; attempts: number; last_status_code: number | null; logged: number }>(
        `select d.status, d.attempts, d.last_status_code, (select count(*)::int from notification_attempts a where a.delivery_id = d.delivery_id) as logged
       from notification_deliveries d where d.notification_id = $1`,
        [notificationId],
      )
    )[0];

  test('queues one receipt for a paid order, keeps the balance and sequence, and a replay changes nothing', async () => {
    const order = await givenOrder(database);
    const event = paidEvent(order);
    assert.equal((await service.deliver(event)).status, 200);
    assert.equal((await finishedEvent(database, event.id)).status, 'processed');
    const [receipt] = await waitFor('the receipt queued by the example', async () => {
      const found = await rows<{ order_id: string; account_id: string; amount: number; currency: string; sent_at: Date | null }>(
        'select * from receipt_emails where order_id = $1',
        [order.order_id],
      );
      return found.length > 0 && found;
    });
    assert.deepEqual(receipt, { order_id: order.order_id, account_id: order.account_id, amount: order.amount, currency: order.currency, sent_at: null });
    const [told] = await rows<{ webhook_id: string; type: string }>('select webhook_id, type from processed_notifications');
    assert.equal(told?.type, 'order.paid');
    const webhookId = told.webhook_id;
    await waitFor('the first delivery recorded', async () => (await deliveryOf(webhookId))?.status === 'delivered');

    const replay = await service.call('POST', '/admin/api/notifications/replay', { body: { ids: [webhookId] } });
    assert.deepEqual([replay.status, replay.body], [202, { replayed: [webhookId], skipped: [] }]);
    // A fresh count of attempts, and a second attempt in the delivery's log: sent again, answered 204.
    const delivery = await waitFor('the replay delivered', async () => {
      const d = await deliveryOf(webhookId);
      return d?.status === 'delivered' && d.logged === 2 && d;
    });
    assert.deepEqual([delivery.attempts, delivery.last_status_code], [1, 204]);
    assert.deepEqual(await counts(), { processed: 1, accounts: 1, receipts: 1 }, 'the replay was recognised by its webhook-id');
    assert.deepEqual(await rows('select account_id, granted, used, remaining, sequence from app_accounts'), [
      { account_id: order.account_id, granted: order.credits, used: 0, remaining: order.credits, sequence: 1 },
    ]);
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(receiver.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).then((response) => response.status);
  const signed = (secret: string, id: string, body: string) => {
    const now = new Date();
    return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, now, body) };
  };

  test('refuses a request that does not verify with 400, and writes nothing', async () => {
    const before = await counts();
    const body = JSON.stringify({
      type: 'order.paid',
      timestamp: new Date().toISOString(),
      data: {
        account_id: 'acct_forged',
        order_id: 'ord_forged',
        amount: 1,
        currency: 'chf',
        sequence: 99,
        balance: { granted: 1_000_000, used: 0, remaining: 1_000_000 },
      },
    });
    const otherSecret = `whsec_${Buffer.alloc(32, 'not-the-app-secret').toString('base64')}`;
    assert.equal(await post(body, signed(otherSecret, 'msg_forged', body)), 400, 'signed with another secret');
    const genuine = signed(APP_WEBHOOK_SECRET, 'msg_tampered', body);
    assert.equal(await post(body.replace('1000000', '2000000'), genuine), 400, 'a body changed after signing');
    assert.equal(await post(body, {}), 400, 'no signature at all');
    assert.deepEqual(await counts(), before);
  });

  test('a notification older than the account’s newest is recorded, and leaves the balance alone', async () => {
    const [account] = await rows<{ account_id: string; granted: number; sequence: number }>('select account_id, granted, sequence from app_accounts');
    const body = JSON.stringify({
      type: 'subscription.updated',
      timestamp: new Date().toISOString(),
      data: { account_id: account!.account_id, sequence: 0, balance: { granted: 0, used: 0, remaining: 0 } },
    });
    assert.equal(await post(body, signed(APP_WEBHOOK_SECRET, 'msg_late_arrival', body)), 204);
    assert.deepEqual(await rows('select type from processed_notifications where webhook_id = $1', ['msg_late_arrival']), [{ type: 'subscription.updated' }]);
    assert.deepEqual(await rows('select granted, sequence from app_accounts where account_id = $1', [account!.account_id]), [
      { granted: account!.granted, sequence: account!.sequence },
    ]);
  });
});
