// Fulfilment in batches (the worker's group commit, src/worker/run-worker.ts): events fulfilled
// together commit together, and a batch never changes an outcome. A poison event fails alone with
// one attempt counted while the rest of its batch is fulfilled; two Event objects for one order in
// one batch grant once; one event twice in a batch is fulfilled once. The batches are driven
// directly here (fulfilEvents through a GroupCommit like the worker's); no worker runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GroupCommit } from '../../src/db/group-commit.js';
import { claimEvents } from '../../src/events/event-store.js';
import { fulfilEvents, type FulfilResult } from '../../src/fulfilment/fulfil-event.js';
import { createDispatch } from '../../src/fulfilment/handlers.js';
import { databaseForFile } from '../support/database.js';
import { eventRow, givenOrder, grantsOf, incomingEvent, paidEvent, quotaOf } from '../support/factories.js';

const options = { maxAttempts: 3, dispatch: createDispatch({ livemode: false, refundPolicy: 'full' }) };
const database = databaseForFile({ maxConnections: 4 });

/** Submits all at once to a group commit like the worker's, so that they share one batch. */
async function fulfilAsOneBatch(eventIds: string[]): Promise<{ results: FulfilResult[]; transactions: number }> {
  const group = new GroupCommit((ids: string[]) => fulfilEvents(database.db, ids, options), { maxBatch: 50, maxInFlight: 1, retryAlone: () => true });
  // The first submission goes alone at once: an id that does not exist takes that place.
  const [missing, ...results] = await Promise.all(['evt_not_stored', ...eventIds].map((id) => group.submit(id)));
  assert.deepEqual(missing, { status: 'missing' });
  return { results, transactions: group.stats.transactions };
}

test('a batch with a poison event: the others are fulfilled, the poison event fails alone with one attempt', async () => {
  const orders = await Promise.all(Array.from({ length: 4 }, () => givenOrder(database)));
  const events = orders.map((order, i) => paidEvent(order, i === 2 ? { amount: order.amount + 1 } : {}));
  await claimEvents(database.db, events.map(incomingEvent), options);

  const { results, transactions } = await fulfilAsOneBatch(events.map((e) => e.id));
  // The batch was rolled back, then each of its events fulfilled alone.
  assert.equal(transactions, 1 + events.length);

  assert.deepEqual(results.map((r) => r.status), ['processed', 'processed', 'failed', 'processed']);
  for (const [i, event] of events.entries()) {
    const row = await eventRow(database, event.id);
    const order = orders[i]!;
    if (i === 2) {
      assert.deepEqual([row.status, row.attempts], ['failed', 1], 'the rolled-back batch did not count an attempt');
      assert.match(row.last_error ?? '', /amount or currency mismatch/);
      assert.deepEqual(await grantsOf(database, order.order_id), []);
    } else {
      assert.deepEqual([row.status, row.attempts], ['processed', 0]);
      assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
      assert.equal((await quotaOf(database, order.account_id)).granted, order.credits);
    }
  }
});

test('in one batch, two Event objects for one order grant once, and one event twice is fulfilled once', async () => {
  const order = await givenOrder(database);
  const other = await givenOrder(database);
  const first = paidEvent(order);
  const second = paidEvent(order, { sessionId: first.data.object.id as string });
  const single = paidEvent(other);
  await claimEvents(database.db, [first, second, single].map(incomingEvent), options);

  const { results, transactions } = await fulfilAsOneBatch([first.id, second.id, single.id, single.id]);

  assert.equal(transactions, 2, 'all four in one transaction');
  assert.deepEqual(results.map((r) => r.status), ['processed', 'duplicate', 'processed', 'already_finished']);
  assert.equal((await eventRow(database, second.id)).duplicate_of, first.id);
  assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: first.id, credits: order.credits }]);
  assert.equal((await quotaOf(database, order.account_id)).granted, order.credits);
  assert.equal((await quotaOf(database, other.account_id)).granted, other.credits);
});
