// A failed attempt is counted after its transaction rolled back, without the row lock. A replay
// (or a sweep) that takes the row in that gap gives it a new job and a fresh budget; the old
// attempt's failure must then leave the row to the new job: not spend its attempts, not end it
// 'failed'.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimEvents, recordFailure, replayEvents } from '../../src/events/event-store.js';
import { paidEvent, eventRow, givenOrder, incomingEvent } from '../support/factories.js';
import { databaseForFile } from '../support/database.js';

const database = databaseForFile();
const options = { maxAttempts: 5 };
const permanent = { message: 'unknown order', permanent: true, ignoreWhenExhausted: false };

test("an attempt's failure counts against the job it ran under, and not after a replay gave the row a new one", async () => {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  await claimEvents(database.db, [incomingEvent(event)], options);
  const attempt = await eventRow(database, event.id);

  // The replay lands between the attempt's rollback and its count.
  assert.deepEqual(await replayEvents(database.db, [event.id], options), [event.id]);
  assert.equal(await recordFailure(database.db, attempt, permanent, options), undefined);
  const replayed = await eventRow(database, event.id);
  assert.deepEqual([replayed.status, replayed.attempts, replayed.last_error], ['processing', 0, null]);

  // An attempt under the new job counts.
  assert.equal(await recordFailure(database.db, replayed, permanent, options), 'failed');
  const failed = await eventRow(database, event.id);
  assert.deepEqual([failed.status, failed.attempts, failed.last_error], ['failed', 1, 'unknown order']);
});
