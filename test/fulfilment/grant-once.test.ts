// A paid checkout grants the order's credits exactly once, however many deliveries, Event
// objects, replays or resends reach the worker (docs/design.md, invariants 3, 4 and 5). The real
// web and worker wiring runs; outcomes are read where a user sees them (quota API) and in the
// tables.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';

import { finishedEvent, givenOrder, grantsOf, orderRow, paidEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile();

async function quota(accountId: string): Promise<Record<string, unknown>> {
  const reply = await file.service.call('GET', `/api/accounts/${accountId}/quota`);
  assert.equal(reply.status, 200);
  return reply.body;
}

const granted = (accountId: string, credits: number) => ({ account_id: accountId, granted: credits, used: 0, remaining: credits });

describe('a paid checkout.session.completed for a known order', () => {
  test('is processed, marks the order paid and grants its credits once', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    assert.equal((await file.service.deliver(event)).status, 200);

    const row = await finishedEvent(file.database, event.id);
    assert.equal(row.status, 'processed');
    assert.equal(row.attempts, 0);
    assert.equal(row.last_error, null);
    const paid = await orderRow(file.database, order.order_id);
    assert.equal(paid.status, 'paid');
    assert.ok(paid.paid_at instanceof Date);
    assert.equal(paid.checkout_session_id, event.data.object.id);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
  });
});

describe('two Event objects for one payment grant once', () => {
  test('the second checkout.session.completed for the session ends duplicate of the first', async () => {
    const order = await givenOrder(file.database);
    const first = paidEvent(order, { sessionId: `cs_test_${order.order_id}` });
    const second = paidEvent(order, { sessionId: `cs_test_${order.order_id}` });
    await file.service.deliver(first);
    assert.equal((await finishedEvent(file.database, first.id)).status, 'processed');
    await file.service.deliver(second);

    const row = await finishedEvent(file.database, second.id);
    assert.equal(row.status, 'duplicate');
    assert.equal(row.duplicate_of, first.id);
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: first.id, credits: order.credits }]);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });

  test('delivered at the same moment, one is processed and the other is its duplicate', async () => {
    const order = await givenOrder(file.database);
    const events = [paidEvent(order, { sessionId: `cs_test_${order.order_id}` }), paidEvent(order, { sessionId: `cs_test_${order.order_id}` })];
    const replies = await Promise.all(events.map((e) => file.service.deliver(e)));
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200],
    );

    const rows = await Promise.all(events.map((e) => finishedEvent(file.database, e.id)));
    const processed = rows.filter((r) => r.status === 'processed');
    const duplicates = rows.filter((r) => r.status === 'duplicate');
    assert.equal(processed.length, 1);
    assert.equal(duplicates.length, 1);
    assert.equal(duplicates[0]!.duplicate_of, processed[0]!.event_id);
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: processed[0]!.event_id, credits: order.credits }]);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });

  test('checkout.session.completed paid then async_payment_succeeded for the order grant once', async () => {
    const order = await givenOrder(file.database);
    const sessionId = `cs_test_${order.order_id}`;
    const completed = paidEvent(order, { sessionId });
    const succeeded = paidEvent(order, { sessionId, type: 'checkout.session.async_payment_succeeded' });
    await file.service.deliver(completed);
    assert.equal((await finishedEvent(file.database, completed.id)).status, 'processed');
    await file.service.deliver(succeeded);

    const row = await finishedEvent(file.database, succeeded.id);
    assert.equal(row.status, 'duplicate');
    assert.equal(row.duplicate_of, completed.id);
    assert.equal((await grantsOf(file.database, order.order_id)).length, 1);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });
});

describe('one event delivered many times with the worker running', () => {
  test('50 concurrent deliveries make one row, one grant and no 5xx', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    const replies = await Promise.all(Array.from({ length: 50 }, () => file.service.deliver(event)));
    assert.deepEqual(new Set(replies.map((r) => r.status)), new Set([200]));
    assert.equal(replies.filter((r) => r.body.duplicate !== true).length, 1);

    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from stripe_events where object_id = ${event.data.object.id}`.execute(file.database.db);
    assert.equal(rows[0]!.n, 1);
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });
});

describe('business idempotency survives what happens to event rows', () => {
  test('an ops replay of a fulfilled event is accepted, runs again and leaves the quota unchanged', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    await file.service.deliver(event);
    const firstRun = await finishedEvent(file.database, event.id);
    assert.equal(firstRun.status, 'processed');

    const reply = await file.service.call('POST', `/admin/api/events/${event.id}/replay`);
    assert.equal(reply.status, 202);
    assert.deepEqual(reply.body, { event_id: event.id, status: 'processing' });
    // The replay reset the row to 'processing' before answering, so a finished row is the rerun.
    const rerun = await finishedEvent(file.database, event.id);
    assert.equal(rerun.status, 'processed');
    assert.ok(rerun.finished_at!.getTime() > firstRun.finished_at!.getTime(), 'the replay ran the event again');
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });

  test('an ops replay of the duplicate ends duplicate again, granting nothing', async () => {
    const order = await givenOrder(file.database);
    const [first, second] = [paidEvent(order, { sessionId: `cs_test_${order.order_id}` }), paidEvent(order, { sessionId: `cs_test_${order.order_id}` })];
    await file.service.deliver(first);
    await finishedEvent(file.database, first.id);
    await file.service.deliver(second);
    assert.equal((await finishedEvent(file.database, second.id)).status, 'duplicate');

    assert.equal((await file.service.call('POST', `/admin/api/events/${second.id}/replay`)).status, 202);
    const rerun = await finishedEvent(file.database, second.id);
    assert.equal(rerun.status, 'duplicate');
    assert.equal(rerun.duplicate_of, first.id);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });

  test('a resend after the event row was pruned is stored again and grants nothing more', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    await file.service.deliver(event);
    await finishedEvent(file.database, event.id);
    await file.database.db.deleteFrom('stripe_events').where('event_id', '=', event.id).execute();

    assert.deepEqual((await file.service.deliver(event)).body, { received: true });
    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
    assert.deepEqual(await quota(order.account_id), granted(order.account_id, order.credits));
  });

  test('replaying an unknown event id is a 404', async () => {
    const reply = await file.service.call('POST', '/admin/api/events/evt_test_unknown/replay');
    assert.equal(reply.status, 404);
  });
});
