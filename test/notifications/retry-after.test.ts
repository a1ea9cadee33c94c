// The app's Retry-After (docs/notifications.md, "Retries"): on 429, 502, 503 and 504 the next
// attempt waits as long as the app asks, capped at an hour and never less than the backoff, and so
// do the endpoint's other pending deliveries; on another status, or malformed, the backoff alone.
// The backoff here is 300 ms, so that a delivery the header did not hold back is retried at once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { createOutbox } from '../../src/notifications/outbox.js';
import { askedRetryAfterMs } from '../../src/notifications/retry-after.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { notifyingTo, orderPaidNotification, startNotificationReceiver, type NotificationReceiver } from '../support/notification-receiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const TEST_BACKOFF_MS = 300;
/** Long enough for several retries at TEST_BACKOFF_MS, had the Retry-After been ignored. */
const QUIET_WINDOW_MS = 2_000;
const ELSEWHERE = 'http://127.0.0.1:9/elsewhere';

describe('the app’s Retry-After', () => {
  let database: TestDatabase;
  let receiver: NotificationReceiver;
  let service: TestService;
  before(async () => {
    database = await createTestDatabase();
    receiver = await startNotificationReceiver();
    service = await startTestService(database, { env: notifyingTo(receiver), workerOptions: { notificationRetryDelayMs: () => TEST_BACKOFF_MS } });
  });
  after(async () => {
    await service?.close();
    await receiver?.close();
    await database?.close();
  });

  /**
   * Writes a notification as an outcome would, to `endpoints`; returns its webhook-id. `dueLater`:
   * its deliveries are due in ten minutes, set in the same transaction, so the pump can never take
   * them in between (it polls on its own and would send them at once).
   */
  const notify = async (key: string, endpoints = [receiver.url], { dueLater = false } = {}) => {
    await database.db.transaction().execute(async (tx) => {
      await createOutbox({ appWebhookUrls: endpoints }).add(tx, [orderPaidNotification(key, 'acct_throttled')]);
      if (!dueLater) return;
      await sql`update notification_deliveries set next_attempt_at = now() + interval '10 minutes'
                where notification_id = (select notification_id from notifications where business_key = ${key})`.execute(tx);
    });
    const row = await database.db.selectFrom('notifications').select('notification_id').where('business_key', '=', key).executeTakeFirstOrThrow();
    return row.notification_id;
  };
  const delivery = (notificationId: string, endpoint = receiver.url) =>
    database.db
      .selectFrom('notification_deliveries')
      .selectAll()
      .where('notification_id', '=', notificationId)
      .where('endpoint', '=', endpoint)
      .executeTakeFirstOrThrow();
  // A deadline for a loaded host (CI's two cores running other test files): the attempt itself
  // takes a poll (500 ms) and a request.
  const recorded = (notificationId: string, attempts: number) =>
    waitFor(
      `attempt ${attempts} of ${notificationId} recorded`,
      async () => {
        const d = await delivery(notificationId);
        return d.attempts === attempts && d.leased_until === null && d;
      },
      { timeoutMs: 30_000 },
    );
  const secondsUntil = async (at: Date) => {
    const { rows } = await sql<{ seconds: number }>`select extract(epoch from ${at}::timestamptz - now())::float8 as seconds`.execute(database.db);
    return rows[0]!.seconds;
  };
  const requestsOf = (notificationId: string) => receiver.received.filter((r) => r.id === notificationId);

  test('429 with Retry-After: 3600 puts the next attempt an hour out, and the endpoint’s other pending deliveries with it', async () => {
    // Two deliveries in their backoff when the app says it is overloaded: one to this app, one elsewhere.
    const waiting = await notify('waiting', [receiver.url, ELSEWHERE], { dueLater: true });
    receiver.answer = () => ({ status: 429, body: 'slow down', headers: { 'retry-after': '3600' } });
    const throttled = await notify('throttled');

    const first = await recorded(throttled, 1);
    assert.deepEqual([first.status, first.last_status_code, first.last_error], ['pending', 429, 'HTTP 429: "slow down" (Retry-After: 3600 s)']);
    const wait = await secondsUntil(first.next_attempt_at);
    assert.ok(wait > 3_590 && wait <= 3_600, `the next attempt waits the hour asked (${wait} s), not the ${TEST_BACKOFF_MS} ms backoff`);
    assert.ok((await secondsUntil((await delivery(waiting)).next_attempt_at)) > 3_590, 'the endpoint’s other delivery waits as long');
    const elsewhere = await secondsUntil((await delivery(waiting, ELSEWHERE)).next_attempt_at);
    assert.ok(elsewhere < 601, `another endpoint’s delivery keeps its own time (${elsewhere} s)`);

    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    assert.equal(requestsOf(throttled).length, 1, 'no second request while the app asked to wait');
    assert.equal(requestsOf(waiting).length, 0);
  });

  test('a longer Retry-After is capped at an hour', async () => {
    receiver.answer = () => ({ status: 503, headers: { 'retry-after': '86400' } });
    const capped = await notify('capped');
    const first = await recorded(capped, 1);
    assert.equal(first.last_error, 'HTTP 503 (Retry-After: 3600 s, capped)');
    const wait = await secondsUntil(first.next_attempt_at);
    assert.ok(wait > 3_590 && wait <= 3_600, `capped at an hour (${wait} s)`);
  });

  test('a short Retry-After is waited for, then the notification is delivered', async () => {
    const arrivals: Array<{ id: string; at: number }> = [];
    receiver.answer = (request) => (
      arrivals.push({ id: request.id, at: performance.now() }),
      requestsOf(request.id).length === 0 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 204 }
    );
    const briefly = await notify('briefly');
    const delivered = await waitFor('the delivery after the wait', async () => {
      const d = await delivery(briefly);
      return d.status === 'delivered' && d;
    });
    assert.equal(delivered.attempts, 2);
    assert.deepEqual(
      requestsOf(briefly).map((r) => r.answered),
      [503, 204],
    );
    const [asked, retried] = arrivals.filter((a) => a.id === briefly).map((a) => a.at);
    assert.ok(retried! - asked! >= 1_900, `the retry came after the 2 s asked (${Math.round(retried! - asked!)} ms)`);
  });

  test('on another status, or malformed, Retry-After is ignored: the backoff alone', async () => {
    const answers = [{ status: 500, headers: { 'retry-after': '3600' } }, { status: 503, headers: { 'retry-after': 'in a while' } }, { status: 204 }];
    receiver.answer = (request) => answers[requestsOf(request.id).length]!;
    const ignored = await notify('ignored');
    const delivered = await waitFor('the delivery after two backoffs', async () => {
      const d = await delivery(ignored);
      return d.status === 'delivered' && d;
    });
    assert.equal(delivered.attempts, 3);
  });
});

test('Retry-After is read as delta-seconds or an HTTP-date, on 429, 502, 503 and 504 only', () => {
  const now = Date.parse('2026-12-04T09:00:00Z');
  assert.equal(askedRetryAfterMs(429, '120', now), 120_000);
  assert.equal(askedRetryAfterMs(502, ' 0 ', now), 0);
  assert.equal(askedRetryAfterMs(504, 'Fri, 04 Dec 2026 09:30:00 GMT', now), 1_800_000);
  assert.equal(askedRetryAfterMs(503, 'Fri, 04 Dec 2026 08:00:00 GMT', now), 0, 'a date past is now');
  assert.equal(askedRetryAfterMs(429, '9'.repeat(400), now), Infinity, 'huge, capped where it is honoured');
  for (const malformed of ['-5', '1.5', '2 hours', 'Friday, 04-Dec-26 09:30:00 GMT', 'Fri, 04 Dec 2026 09:30:00 +0000', '']) {
    assert.equal(askedRetryAfterMs(429, malformed, now), null, `malformed: ${malformed}`);
  }
  assert.equal(askedRetryAfterMs(429, undefined, now), null);
  for (const status of [500, 408, 301, 410]) assert.equal(askedRetryAfterMs(status, '60', now), null, `ignored on ${status}`);
});
