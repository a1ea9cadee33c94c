// The wake protocol of src/events/event-waits.ts raced on real Postgres: a handler that locks its
// wait key, looks for what it needs and parks, against a transaction that writes what it needs and
// wakes the key, started at the same moment, many times. Whichever commits first, the event is
// never left parked once what it waits for exists: it saw it, or it was woken.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { lockWaitKeys, wakeWaiting } from '../../src/events/event-waits.js';
import { RetryLaterError, type EventHandler } from '../../src/fulfilment/handler.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';
import { databaseForFile } from '../support/database.js';
import { fulfilWith } from '../support/handlers.js';

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
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs where key = (select job_key from stripe_events where event_id = ${event.id})`.execute(database.db);
  assert.equal(rows[0]!.n, 1);
});
