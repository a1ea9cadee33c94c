// The handler contract of docs/handlers.md, held by the real fulfilment loop on real Postgres:
// what a handler writes commits with the status it returns, or not at all; each error class
// ends the event as documented; a type no module lists is 'ignored'; two modules listing one type
// both run and the first outcome that is not 'ignored' counts; a batch handler gets its events at once.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { sql, type Transaction } from 'kysely';
import type { Database, StripeEventRow } from '../../src/db/schema.js';
import { WAIT_HOURS } from '../../src/events/event-waits.js';
import type { EventHandler } from '../../src/module-contract.js';
import { PermanentError, RetryLaterError } from '../../src/outcomes.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';
import { databaseForFile } from '../support/database.js';
import { endWait } from '../support/factories.js';
import { fulfilWith } from '../support/handlers.js';

const database = databaseForFile({ maxConnections: 4 });
const TYPE = 'payment_intent.succeeded';
const anEvent = (type = TYPE) => sampleEvent(type, { ...exampleObject('payment_intent'), id: randomStripeId('pi') });

// Each suite makes the table in its own hook, which runs once the file's database exists.
const effectsTable = () =>
  before(() => sql`create table if not exists effects (event_id text, by text, primary key (event_id, by))`.execute(database.db).then(() => undefined));

/** A side effect the test can see: one row per event and handler, in the fulfilment transaction. */
const recordEffect = (tx: Transaction<Database>, event: StripeEventRow, by: string) =>
  sql`insert into effects (event_id, by) values (${event.event_id}, ${by})`.execute(tx);
const effectsOf = async (eventId: string) =>
  (await sql<{ by: string }>`select by from effects where event_id = ${eventId} order by by`.execute(database.db)).rows.map((r) => r.by);

/** What a parked event waits for, and whether it waits. */
const waitOf = async (eventId: string) =>
  (
    await sql<{
      waits_for: string[] | null;
      waiting: boolean;
    }>`select waits_for, waits_for is not null and status = 'processing' as waiting from stripe_events where event_id = ${eventId}`.execute(database.db)
  ).rows[0];

const writesThen =
  (outcome: () => ReturnType<EventHandler>, by = 'handler'): EventHandler =>
  async (tx, event) => {
    await recordEffect(tx, event, by);
    return outcome();
  };

describe('one handler', () => {
  effectsTable();
  test("'processed': its write commits with the status", async () => {
    const event = anEvent();
    const [done] = await fulfilWith(database, { [TYPE]: writesThen(() => Promise.resolve({ status: 'processed' })) }, [event]);
    assert.equal(done!.row.status, 'processed');
    assert.deepEqual(await effectsOf(event.id), ['handler']);
  });

  test("'duplicate': names the event that produced the effect", async () => {
    const event = anEvent();
    const [done] = await fulfilWith(database, { [TYPE]: () => Promise.resolve({ status: 'duplicate', duplicateOf: 'evt_original' }) }, [event]);
    assert.deepEqual([done!.row.status, done!.row.duplicate_of], ['duplicate', 'evt_original']);
  });

  test('a PermanentError ends the event failed at once with its message, and rolls its write back', async () => {
    const event = anEvent();
    const [done] = await fulfilWith(database, { [TYPE]: writesThen(() => Promise.reject(new PermanentError('unknown order ord_x'))) }, [event]);
    assert.deepEqual([done!.row.status, done!.row.attempts], ['failed', 1]);
    assert.match(done!.row.last_error ?? '', /unknown order ord_x/);
    assert.deepEqual(await effectsOf(event.id), []);
  });

  test('any other error keeps the event processing for a retry, counted, its write rolled back', async () => {
    const event = anEvent();
    const [done] = await fulfilWith(database, { [TYPE]: writesThen(() => Promise.reject(new Error('connection reset'))) }, [event]);
    assert.deepEqual([done!.result.status, done!.row.status, done!.row.attempts], ['processing', 'processing', 1]);
    assert.equal(done!.row.last_error, 'connection reset');
    assert.deepEqual(await effectsOf(event.id), []);
  });

  test('a RetryLaterError parks the event: processing, no attempt spent, waiting for its keys, with its reason', async () => {
    const event = anEvent();
    const notYet = () => Promise.reject(new RetryLaterError('the payment is not fulfilled yet', { waitsFor: ['payment_intent:pi_x'] }));
    const [done] = await fulfilWith(database, { [TYPE]: notYet }, [event], { maxAttempts: 1 });
    assert.deepEqual(
      [done!.result.status, done!.row.status, done!.row.attempts, done!.row.last_error],
      ['processing', 'processing', 0, 'the payment is not fulfilled yet'],
    );
    assert.deepEqual(await waitOf(event.id), { waits_for: ['payment_intent:pi_x'], waiting: true });
  });

  test('on the last attempt a transient error ends the event failed', async () => {
    const event = anEvent();
    const [done] = await fulfilWith(database, { [TYPE]: () => Promise.reject(new Error('still down')) }, [event], { maxAttempts: 1 });
    assert.equal(done!.row.status, 'failed');
  });

  test("'ignored' with a reason keeps the reason for ops", async () => {
    const event = anEvent();
    const [done] = await fulfilWith(database, { [TYPE]: () => Promise.resolve({ status: 'ignored', reason: 'not one of our payments' }) }, [event]);
    assert.deepEqual([done!.row.status, done!.row.last_error], ['ignored', 'not one of our payments']);
  });

  test('a RetryLaterError that may wait forever ends ignored, with its message, when its wait gives up', async () => {
    const event = anEvent();
    const waitForPayment = () =>
      Promise.reject(new RetryLaterError('no payment pi_x known yet', { waitsFor: ['payment_intent:pi_x'], ignoreWhenExhausted: true }));
    const [first] = await fulfilWith(database, { [TYPE]: waitForPayment }, [event], { maxAttempts: 2 });
    assert.equal(first!.row.status, 'processing');
    // Waits do not spend attempts: a third run within the wait still waits.
    const [again] = await fulfilWith(database, { [TYPE]: waitForPayment }, [event], { maxAttempts: 2 });
    assert.deepEqual([again!.row.status, again!.row.attempts], ['processing', 0]);
    await endWait(database, event.id);
    const [last] = await fulfilWith(database, { [TYPE]: waitForPayment }, [event], { maxAttempts: 2 });
    assert.deepEqual([last!.row.status, last!.row.attempts], ['ignored', 0]);
    assert.match(last!.row.last_error ?? '', /^gave up waiting after \d+ h: no payment pi_x known yet$/);
  });

  test('a type no module lists is stored and ends ignored', async () => {
    const event = anEvent('customer.created');
    const [done] = await fulfilWith(database, { [TYPE]: writesThen(() => Promise.resolve({ status: 'processed' })) }, [event]);
    assert.equal(done!.row.status, 'ignored');
    assert.deepEqual(await effectsOf(event.id), []);
  });
});

describe('modules sharing a type', () => {
  effectsTable();
  test('both handlers run in the one transaction, and the first outcome that is not ignored is the event’s', async () => {
    const event = anEvent();
    const notMine = writesThen(() => Promise.resolve({ status: 'ignored' }), 'a');
    const mine = writesThen(() => Promise.resolve({ status: 'processed' }), 'b');
    const [done] = await fulfilWith(database, [{ [TYPE]: notMine }, { [TYPE]: mine }], [event]);
    assert.equal(done!.row.status, 'processed');
    assert.deepEqual(await effectsOf(event.id), ['a', 'b']);
  });

  test('a RetryLaterError yields to a module that acted: the event is done, with that module’s write', async () => {
    const event = anEvent();
    const notYet = () => Promise.reject(new RetryLaterError('no order for this payment yet', { waitsFor: ['payment_intent:pi_x'] }));
    const [done] = await fulfilWith(database, [{ [TYPE]: notYet }, { [TYPE]: writesThen(() => Promise.resolve({ status: 'processed' }), 'b') }], [event]);
    assert.equal(done!.row.status, 'processed');
    assert.deepEqual(await effectsOf(event.id), ['b']);
  });

  test('when no module acted, a RetryLaterError parks the event', async () => {
    const event = anEvent();
    const notYet = () => Promise.reject(new RetryLaterError('no order for this payment yet', { waitsFor: ['payment_intent:pi_x'] }));
    const [done] = await fulfilWith(database, [{ [TYPE]: notYet }, { [TYPE]: () => Promise.resolve({ status: 'ignored' }) }], [event]);
    assert.deepEqual([done!.row.status, done!.row.last_error], ['processing', 'no order for this payment yet']);
    assert.deepEqual(await waitOf(event.id), { waits_for: ['payment_intent:pi_x'], waiting: true });
  });

  test("when every module says it is not its own, the event ends 'ignored' at once with every reason given", async () => {
    const event = anEvent();
    const handlers = [
      { [TYPE]: () => Promise.resolve({ status: 'ignored' as const, reason: 'no order paid by pi_x' }) },
      { [TYPE]: () => Promise.resolve({ status: 'ignored' as const }) },
      { [TYPE]: () => Promise.resolve({ status: 'ignored' as const, reason: 'no invoice paid by pi_x' }) },
    ];
    const [done] = await fulfilWith(database, handlers, [event]);
    assert.deepEqual([done!.row.status, done!.row.attempts, done!.row.last_error], ['ignored', 0, 'no order paid by pi_x; no invoice paid by pi_x']);
  });

  test("when several wait, the event waits for what each waits for, and ends 'ignored' only if every one may", async () => {
    for (const [mayIgnore, ends] of [
      [true, 'ignored'],
      [false, 'failed'],
    ] as const) {
      const event = anEvent();
      const handlers = [
        { [TYPE]: () => Promise.reject(new RetryLaterError('no order yet', { waitsFor: ['order:o'], ignoreWhenExhausted: true })) },
        { [TYPE]: () => Promise.reject(new RetryLaterError('no invoice yet', { waitsFor: ['invoice:i'], ignoreWhenExhausted: mayIgnore })) },
      ];
      const [parked] = await fulfilWith(database, handlers, [event], { maxAttempts: 1 });
      assert.deepEqual([parked!.row.status, parked!.row.last_error], ['processing', 'no order yet; no invoice yet']);
      assert.deepEqual(await waitOf(event.id), { waits_for: ['invoice:i', 'order:o'], waiting: true });
      await endWait(database, event.id);
      const [done] = await fulfilWith(database, handlers, [event], { maxAttempts: 1 });
      assert.deepEqual([done!.row.status, done!.row.last_error], [ends, `gave up waiting after ${WAIT_HOURS} h: no order yet; no invoice yet`]);
    }
  });

  test('one failing rolls back the other’s write too', async () => {
    const event = anEvent();
    const [done] = await fulfilWith(
      database,
      [{ [TYPE]: writesThen(() => Promise.resolve({ status: 'processed' }), 'a') }, { [TYPE]: () => Promise.reject(new PermanentError('bad')) }],
      [event],
    );
    assert.equal(done!.row.status, 'failed');
    assert.deepEqual(await effectsOf(event.id), []);
  });
});

test('a batch handler gets all the events of its types in a job at once, in order', async () => {
  const events = [anEvent(), anEvent('charge.succeeded'), anEvent()];
  const calls: string[][] = [];
  const paid = (_tx: Transaction<Database>, rows: readonly StripeEventRow[]) => {
    calls.push(rows.map((row) => row.event_id));
    return Promise.resolve(rows.map(() => ({ status: 'processed' as const })));
  };
  // Registered as a module writes it: one { batch } per type, the same function in both.
  const done = await fulfilWith(database, { [TYPE]: { batch: paid }, 'charge.succeeded': { batch: paid } }, events);
  assert.deepEqual(calls, [events.map((e) => e.id)]);
  assert.deepEqual(
    done.map((d) => d.row.status),
    ['processed', 'processed', 'processed'],
  );
});
