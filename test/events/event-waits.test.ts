// The wake protocol of src/events/event-waits.ts raced on real Postgres: a handler that locks its
// wait key, looks for what it needs and parks, against a transaction that writes what it needs and
// wakes the key, started at the same moment, many times. Whichever commits first, the event is
// never left parked once what it waits for exists: it saw it, or it was woken.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { lockWaitKeys, wakeWaiting } from '../../src/events/event-waits.js';
import type { EventHandler } from '../../src/module-contract.js';
import { RetryLaterError } from '../../src/outcomes.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';
import { databaseForFile } from '../support/database.js';
import { fulfilWith } from '../support/handlers.js';
import { waitFor } from '../support/wait-for.js';

const database = databaseForFile({ maxConnections: 8 });
const TYPE = 'payment_intent.succeeded';
const keyOf = (paymentIntent: string) => `payment_intent:${paymentIntent}`;

const needsArrival: EventHandler = async (tx, event) => {
  const key = keyOf(event.object_id!);
  await lockWaitKeys(tx, [key]);
  const { rows } = await sql`select 1 from arrivals where key = ${key}`.execute(tx);
  if (rows.length > 0) return { status: 'processed' };
  throw new RetryLaterError(`no arrival for ${key} yet`, { waitsFor: [key] });
};

test('a wake racing a wait is never lost: the event saw what it needed, or was woken with a job', async () => {
  await sql`create table arrivals (key text primary key)`.execute(database.db);
  const rounds = 40;
  const outcomes = { saw: 0, woken: 0 };
  for (let i = 0; i < rounds; i++) {
    const paymentIntent = randomStripeId('pi');
    const event = sampleEvent(TYPE, { ...exampleObject('payment_intent'), id: paymentIntent });
    const arrive = database.db.transaction().execute(async (tx) => {
      await sql`insert into arrivals (key) values (${keyOf(paymentIntent)})`.execute(tx);
      return wakeWaiting(tx, [keyOf(paymentIntent)], { maxAttempts: 10 });
    });
    const [[done], woken] = await Promise.all([fulfilWith(database, { [TYPE]: needsArrival }, [event]), arrive]);
    const { rows } = await sql<{ waits_for: string[] | null }>`select waits_for from stripe_events where event_id = ${event.id}`.execute(database.db);
    assert.equal(rows[0]!.waits_for, null, `round ${i}: left waiting after what it waits for arrived`);
    if (done!.row.status === 'processed') outcomes.saw++;
    else {
      assert.deepEqual([done!.row.status, woken], ['processing', [event.id]], `round ${i}: parked, so the arrival must have woken it`);
      outcomes.woken++;
    }
  }
  assert.equal(outcomes.saw + outcomes.woken, rounds);
});

test('a woken event gets one job, and waking a key nobody waits for writes nothing', async () => {
  const paymentIntent = randomStripeId('pi');
  const event = sampleEvent(TYPE, { ...exampleObject('payment_intent'), id: paymentIntent });
  const [parked] = await fulfilWith(database, { [TYPE]: needsArrival }, [event]);
  assert.equal(parked!.row.status, 'processing');
  const wake = () => database.db.transaction().execute((tx) => wakeWaiting(tx, [keyOf(paymentIntent)], { maxAttempts: 10 }));
  assert.deepEqual(await wake(), [event.id]);
  assert.deepEqual(await wake(), [], 'woken once');
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from graphile_worker.jobs where key = (select job_key from stripe_events where event_id = ${event.id})`.execute(database.db);
  assert.equal(rows[0]!.n, 1);
});

test('a wake passes over a waiting row another transaction holds, instead of deadlocking with it', async () => {
  const paymentIntent = randomStripeId('pi');
  const event = sampleEvent(TYPE, { ...exampleObject('payment_intent'), id: paymentIntent });
  const [parked] = await fulfilWith(database, { [TYPE]: needsArrival }, [event]);
  assert.equal(parked!.row.status, 'processing');
  // A fulfilment re-running the parked event (its wait gave up, or the sweep reclaimed it): it
  // holds the row, and takes the key before it reads, as needsArrival does.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holder: number | undefined;
  const rerun = database.db.transaction().execute(async (tx) => {
    await sql`select 1 from stripe_events where event_id = ${event.id} for update`.execute(tx);
    holder = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx)).rows[0]!.pid;
    await released;
    await lockWaitKeys(tx, [keyOf(paymentIntent)]);
    return (await sql`select 1 from arrivals where key = ${keyOf(paymentIntent)}`.execute(tx)).rows.length;
  });
  try {
    await waitFor('the re-run to hold the row', () => Promise.resolve(holder));
    let waked = false;
    const arrive = database.db.transaction().execute(async (tx) => {
      await sql`insert into arrivals (key) values (${keyOf(paymentIntent)})`.execute(tx);
      const woken = await wakeWaiting(tx, [keyOf(paymentIntent)], { maxAttempts: 10 });
      waked = true;
      await waitFor('the re-run to wait for the key', () => blockedBy(holder!, 'advisory'));
      return woken;
    });
    // The re-run goes on for the key once the wake is past the row, or stuck behind it.
    await waitFor(
      'the wake to pass the row, or to wait for it',
      async () => waked || (await blockedBy(holder!, 'transactionid')) || (await blockedBy(holder!, 'tuple')),
    );
    release();
    // The wake passed over the held row; the re-run, once the arrival commits, sees what arrived.
    assert.deepEqual(await arrive, []);
    assert.equal(await rerun, 1);
  } finally {
    release();
    await rerun.catch(() => {});
  }
});

/** Whether some backend waits for `pid` on a lock of this type, or `pid` waits on an advisory lock. */
async function blockedBy(pid: number, lockType: string): Promise<boolean> {
  const { rows } =
    lockType === 'advisory'
      ? await sql`select 1 from pg_locks where pid = ${pid} and locktype = 'advisory' and not granted`.execute(database.db)
      : await sql`select 1 from pg_locks l where not l.granted and l.locktype = ${lockType} and ${pid}::int = any(pg_blocking_pids(l.pid))`.execute(
          database.db,
        );
  return rows.length > 0;
}

test('a waiter and its waker fulfilled in one transaction, the waiter first: it does not stay parked', async () => {
  // The waker's wake runs before the waiter's wait is written (a wait is written after every
  // handler of the transaction has run), so it finds nobody to wake; the waiter must still learn
  // that what it waited for arrived.
  const paymentIntent = randomStripeId('pi');
  const waiter = sampleEvent(TYPE, { ...exampleObject('payment_intent'), id: paymentIntent });
  const arrival = sampleEvent('charge.succeeded', { ...exampleObject('charge'), id: randomStripeId('ch'), payment_intent: paymentIntent });
  const arrives: EventHandler = async (tx) => {
    await sql`insert into arrivals (key) values (${keyOf(paymentIntent)})`.execute(tx);
    await wakeWaiting(tx, [keyOf(paymentIntent)], { maxAttempts: 10 });
    return { status: 'processed' };
  };
  const [waited, arrived] = await fulfilWith(database, { [TYPE]: needsArrival, 'charge.succeeded': arrives }, [waiter, arrival]);
  assert.deepEqual([waited!.row.status, arrived!.row.status], ['processed', 'processed']);
});

test('an event that waits again after a wake is reported as first once, and keeps the deadline of its first wait', async () => {
  const paymentIntent = randomStripeId('pi');
  const event = sampleEvent(TYPE, { ...exampleObject('payment_intent'), id: paymentIntent });
  const waitOf = async () => {
    const [done] = await fulfilWith(database, { [TYPE]: needsArrival }, [event]);
    const result = done!.result;
    assert.ok('wait' in result && result.wait, `parked: ${JSON.stringify(result)}`);
    return result.wait;
  };
  const first = await waitOf();
  // Woken by something that was not what it needs (a link before the grant): it runs and waits again.
  assert.deepEqual(await database.db.transaction().execute((tx) => wakeWaiting(tx, [keyOf(paymentIntent)], { maxAttempts: 10 })), [event.id]);
  const again = await waitOf();
  // Only the first wait is logged at info (report-result.ts): the operator is told once.
  assert.deepEqual([first.first, again.first], [true, false]);
  assert.equal(again.until.getTime(), first.until.getTime(), 'the wait is bounded from its first wait, not restarted by a wake');
});
