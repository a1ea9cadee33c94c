// A thin notification's fetch from Stripe fails: the event waits in 'processing' and is retried
// with graphile-worker's backoff (never 'failed' for a transient error), no transaction is held
// while the fetch hangs, and webhooks are answered meanwhile. A 404 is permanent.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { thinNotification } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, grantsOf, paidEvent, retryingEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

// One second per attempt: a hang costs the SDK's two attempts, 2.5 s.
const file = serviceForFile({ env: { STRIPE_TIMEOUT_SECONDS: '1' } });

async function paidThin(options: { known?: boolean } = {}) {
  const order = await givenOrder(file.database);
  const event = paidEvent(order);
  if (options.known ?? true) file.service.stripe.addEvent({ ...event });
  return { order, thin: thinNotification(event) };
}

const openTransactions = async () => {
  const { rows } = await sql<{ open: number }>`
    select count(*)::int as open from pg_stat_activity
    where datname = current_database() and state like 'idle in transaction%'`.execute(file.database.db);
  return rows[0]!.open;
};

describe('the fetch of a thin notification fails', () => {
  test('Stripe answers 500: the event waits for its retry, then is fulfilled once', async () => {
    const { order, thin } = await paidThin();
    file.service.stripe.failNext(2); // the SDK's try and its one retry
    assert.equal((await file.service.deliver(thin)).status, 200);

    const waiting = await retryingEvent(file.database, thin.id);
    assert.match(waiting.last_error ?? '', /api_error|Simulated Stripe outage/);
    const row = await finishedEvent(file.database, thin.id, { timeoutMs: 20_000 });
    assert.equal(row.status, 'processed');
    assert.ok(row.attempts >= 1);
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: thin.id, credits: order.credits }]);
  });

  test('Stripe hangs: no transaction is held while it does, a snapshot delivery is answered and fulfilled meanwhile, and the thin event is fulfilled once Stripe answers', async () => {
    const { order, thin } = await paidThin();
    file.service.stripe.setDelay(60_000);
    try {
      assert.equal((await file.service.deliver(thin)).status, 200);
      await waitFor('the fetch to be in flight', () =>
        Promise.resolve(file.service.stripe.requests.some((r) => r.path.startsWith('/v1/events/') && r.path.endsWith(thin.snapshot_event!))),
      );
      assert.equal(await openTransactions(), 0);
      const other = await givenOrder(file.database);
      const snapshot = paidEvent(other);
      assert.equal((await file.service.deliver(snapshot)).status, 200);
      assert.equal((await finishedEvent(file.database, snapshot.id, { timeoutMs: 20_000 })).status, 'processed');
      const waiting = await retryingEvent(file.database, thin.id, { timeoutMs: 20_000 });
      assert.match(waiting.last_error ?? '', /did not answer thin_fetch_event in time/);
    } finally {
      file.service.stripe.setDelay(0);
    }
    assert.equal((await finishedEvent(file.database, thin.id, { timeoutMs: 30_000 })).status, 'processed');
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: thin.id, credits: order.credits }]);
  });

  test('Stripe answers 404: the event ends failed at once, naming the fetch', async () => {
    const { order, thin } = await paidThin({ known: false });
    assert.equal((await file.service.deliver(thin)).status, 200);

    const row = await finishedEvent(file.database, thin.id);
    assert.deepEqual([row.status, row.attempts], ['failed', 1]);
    assert.match(row.last_error ?? '', new RegExp(`404 for GET /v1/events/${thin.snapshot_event}`));
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });

  test('Stripe away while thin notifications keep arriving: every delivery 200, every event fulfilled once after', async () => {
    file.service.stripe.failNext(1_000_000);
    const arrivals = [];
    try {
      for (let i = 0; i < 10; i++) {
        const arrival = await paidThin();
        assert.equal((await file.service.deliver(arrival.thin)).status, 200);
        arrivals.push(arrival);
      }
      for (const { thin } of arrivals) await retryingEvent(file.database, thin.id, { timeoutMs: 20_000 });
    } finally {
      file.service.stripe.failNext(0);
    }
    for (const { order, thin } of arrivals) {
      assert.equal((await finishedEvent(file.database, thin.id, { timeoutMs: 60_000 })).status, 'processed');
      assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: thin.id, credits: order.credits }]);
    }
  });
});
