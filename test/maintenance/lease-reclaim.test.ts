// A worker killed in the middle of a delivery (docs/notifications.md, guarantee 2): the app got the
// request and never answered, the process is SIGKILLed, and the delivery is neither lost nor left
// to graphile-worker's 4-hour lock: once its lease runs out the sweep queues it again, and another
// process delivers it, with the same webhook-id and the same body.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { createOutbox } from '../../src/notifications/outbox.js';
import { reclaimDeliveries } from '../../src/maintenance/lease-reclaim.js';
import { signDelivery } from '../../src/stripe/sample-events.js';
import { processesForFile } from '../support/child-service.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { notifyingTo, startNotificationReceiver } from '../support/notification-receiver.js';
import { WEBHOOK_SECRET } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

// The cron sweep is pushed out of the way: the test runs the reclaim itself, when it means to.
const file = processesForFile({ SWEEP_CRON: '0 0 1 1 *' });

test('a delivery in flight when its worker is SIGKILLed is retried by another process, never lost', async () => {
  const receiver = await startNotificationReceiver();
  try {
    receiver.answer = () => 'hang';
    // A 2 s attempt: its lease lapses 5 s later (src/notifications/delivery-pump.ts).
    const env = notifyingTo(receiver, { APP_WEBHOOK_TIMEOUT_SECONDS: '2' });
    const first = await file.start(env);
    const order = await givenOrder(file.database);
    const { body, headers } = signDelivery(paidEvent(order), WEBHOOK_SECRET);
    assert.equal((await fetch(`${first.url}/webhooks/stripe`, { method: 'POST', body, headers })).status, 200);
    const [inFlight] = await waitFor('the delivery in flight', () => Promise.resolve(receiver.received.length > 0 && receiver.received));
    first.process.kill('SIGKILL');
    assert.equal(await first.exited, 'SIGKILL');
    receiver.dropHanging();
    receiver.answer = () => ({ status: 204 });

    const leased = await file.database.db
      .selectFrom('notification_deliveries')
      .selectAll()
      .where('notification_id', '=', inFlight!.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual([leased.status, leased.attempts, leased.leased_until !== null], ['pending', 1, true], 'the dead attempt left its lease and nothing else');

    const second = await file.start({ ...env, ROLE: 'worker' });
    await waitFor('the sweep to queue the abandoned delivery again', async () => (await reclaimDeliveries(file.database.db, 23)) === 1, { timeoutMs: 20_000 });
    const delivered = await waitFor('the delivery', async () => {
      const d = await file.database.db.selectFrom('notification_deliveries').selectAll().where('notification_id', '=', inFlight!.id).executeTakeFirstOrThrow();
      return d.status === 'delivered' && d;
    });
    assert.equal(delivered.attempts, 2);
    const requests = receiver.received.filter((r) => r.id === inFlight!.id);
    assert.deepEqual(
      requests.map((r) => [r.verified, r.answered]),
      [
        [true, 'hung'],
        [true, 204],
      ],
    );
    assert.equal(requests[0]!.body, requests[1]!.body);
    const attempts = await file.database.db
      .selectFrom('notification_attempts')
      .select(['status_code', 'error'])
      .where('delivery_id', '=', delivered.delivery_id)
      .orderBy('started_at')
      .execute();
    assert.deepEqual(attempts, [
      { status_code: null, error: 'interrupted: the worker stopped during the attempt, which was retried' },
      { status_code: 204, error: null },
    ]);
    second.process.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  } finally {
    await receiver.close();
  }
});

test('an interrupted last attempt ends the delivery failed, not retried for good', async () => {
  const outbox = createOutbox({ appWebhookUrls: ['http://127.0.0.1:9/app'] });
  await file.database.db
    .transaction()
    .execute((tx) =>
      outbox.add(tx, [{ type: 'order.paid', key: 'order.paid:ord_interrupted', accountId: 'acct_interrupted', sequence: 1, eventId: null, data: {} }]),
    );
  // As a worker leaves it when it dies during the 23rd attempt.
  await sql`update notification_deliveries d set attempts = 23, leased_until = now() - interval '1 second', last_attempt_at = now() - interval '20 seconds'
            from notifications n where n.notification_id = d.notification_id and n.business_key = 'order.paid:ord_interrupted'`.execute(file.database.db);
  assert.equal(await reclaimDeliveries(file.database.db, 23), 1);
  const { rows } = await sql<{ status: string; last_error: string; leased: boolean }>`
    select d.status, d.last_error, d.leased_until is not null as leased
    from notification_deliveries d join notifications n using (notification_id) where n.business_key = 'order.paid:ord_interrupted'`.execute(file.database.db);
  assert.deepEqual(rows, [{ status: 'failed', last_error: 'interrupted: the worker stopped during the attempt: it was the last', leased: false }]);
  assert.equal(await reclaimDeliveries(file.database.db, 23), 0, 'a failed delivery is not queued again');
});
