// A handler that keeps hitting a transient error counts its attempts on the event row, keeps
// the event 'processing' for the retry, and ends 'failed' (the dead letter) at MAX_ATTEMPTS,
// never granting on the way; once the cause is fixed, an ops replay fulfils it once
// (docs/design.md, invariants 5, 6 and 8). graphile-worker's backoff (e^n seconds) is too slow for
// a test, so the attempts are driven by calling fulfilEvent directly; no worker runs on this
// database.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { claimEvents, replayEvents } from '../../src/events/event-store.js';
import { fulfilEvent } from '../../src/fulfilment/fulfil-event.js';
import { serviceDispatch } from '../support/handlers.js';
import { databaseForFile } from '../support/database.js';
import { eventRow, givenOrder, grantsOf, incomingEvent, orderRow, paidEvent, quotaOf } from '../support/factories.js';

const queue = { maxAttempts: 3, dispatch: serviceDispatch() };
const database = databaseForFile({ maxConnections: 4 });

// A real Postgres error inside the fulfilment transaction, raised by the ledger itself.
async function breakLedger(): Promise<void> {
  await sql`
    create function refuse_grant() returns trigger language plpgsql as $$
    begin raise exception 'credit ledger unavailable (test trigger)'; end $$`.execute(database.db);
  await sql`create trigger refuse_grant before insert on credit_grants for each row execute function refuse_grant()`.execute(database.db);
}
async function repairLedger(): Promise<void> {
  await sql`drop trigger refuse_grant on credit_grants`.execute(database.db);
  await sql`drop function refuse_grant()`.execute(database.db);
}

describe('a transient failure on every attempt', () => {
  test('counts attempts, ends failed at maxAttempts without a grant, and a replay after the fix grants once', async () => {
    const order = await givenOrder(database);
    const event = paidEvent(order);
    assert.deepEqual(await claimEvents(database.db, [incomingEvent(event)], queue), ['claimed']);
    await breakLedger();

    for (const attempt of [1, 2]) {
      const result = await fulfilEvent(database.db, event.id, queue);
      assert.equal(result.status, 'processing', `attempt ${attempt} stays processing for a retry`);
      const row = await eventRow(database, event.id);
      assert.equal(row.status, 'processing');
      assert.equal(row.attempts, attempt);
      assert.match(row.last_error ?? '', /credit ledger unavailable/);
      assert.equal(row.finished_at, null);
      assert.deepEqual(await grantsOf(database, order.order_id), []);
    }

    const last = await fulfilEvent(database.db, event.id, queue);
    assert.equal(last.status, 'failed');
    const failed = await eventRow(database, event.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.attempts, 3);
    assert.match(failed.last_error ?? '', /credit ledger unavailable/);
    assert.ok(failed.finished_at instanceof Date);
    // A job that runs after the dead letter (a late retry) does not resurrect it.
    assert.deepEqual(await fulfilEvent(database.db, event.id, queue), { status: 'already_finished' });
    assert.equal((await eventRow(database, event.id)).attempts, 3);
    assert.deepEqual(await grantsOf(database, order.order_id), []);
    assert.equal((await orderRow(database, order.order_id)).status, 'pending');
    assert.equal((await quotaOf(database, order.account_id)).granted, 0);

    await repairLedger();
    assert.deepEqual(await replayEvents(database.db, [event.id], queue), [event.id]);
    const replayed = await eventRow(database, event.id);
    assert.equal(replayed.status, 'processing');
    assert.equal(replayed.attempts, 0);
    assert.equal(replayed.last_error, null);

    assert.equal((await fulfilEvent(database.db, event.id, queue)).status, 'processed');
    const done = await eventRow(database, event.id);
    assert.equal(done.status, 'processed');
    assert.equal(done.last_error, null);
    assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
    assert.equal((await orderRow(database, order.order_id)).status, 'paid');
    assert.deepEqual(await quotaOf(database, order.account_id), { account_id: order.account_id, granted: order.credits, used: 0, remaining: order.credits });
  });
});
