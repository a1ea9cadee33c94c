// Group commit's idle signal, which fulfilment awaits where the webhook's claims share the process
// (src/fulfilment/fulfilment-batcher.ts): at once when nothing is queued or in flight, when the
// last transaction in flight ends, and never later than the wait allowed; and the wait before a
// batch, during which later items join it; what a timeout does to an item still queued; and the
// busy share the notification pump gives way to (src/notifications/delivery-pump.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { GroupCommit } from '../../src/db/group-commit.js';

/** A group commit whose transactions end when the test says so. */
function heldGroup() {
  const ends: Array<() => void> = [];
  const group = new GroupCommit<number, number>((items) => new Promise((resolve) => ends.push(() => resolve(items))), {
    maxBatch: 10,
    maxInFlight: 1,
    retryAlone: () => false,
  });
  /** Ends the oldest transaction in flight, once one is. */
  const endNext = async () => {
    while (ends.length === 0) await new Promise((resolve) => setImmediate(resolve));
    ends.shift()!();
  };
  return { group, endNext };
}

const settled = (promise: Promise<unknown>) => Promise.race([promise.then(() => true), new Promise((resolve) => setImmediate(() => resolve(false)))]);

test('idle: whenIdle resolves at once', async () => {
  const { group } = heldGroup();
  assert.equal(await settled(group.whenIdle(60_000)), true);
});

test('busy: whenIdle resolves when the last transaction in flight and the queue behind it have committed', async () => {
  const { group, endNext } = heldGroup();
  const first = group.submit(1);
  const second = group.submit(2);
  const idle = group.whenIdle(60_000);
  assert.equal(await settled(idle), false);
  await endNext();
  assert.equal(await first, 1);
  assert.equal(await settled(idle), false, 'the queued item went next: still busy');
  await endNext();
  assert.equal(await second, 2);
  assert.equal(await settled(idle), true);
});

test('busy for longer than the wait allowed: whenIdle resolves anyway', async () => {
  const { group, endNext } = heldGroup();
  const item = group.submit(1);
  await group.whenIdle(50);
  assert.equal(await settled(item), false, 'resolved by the limit, with the transaction still in flight');
  await endNext();
  await item;
});

test('busyShare: near 1 while a transaction stays open, falling towards 0 once none is', async () => {
  const { group, endNext } = heldGroup();
  assert.equal(group.busyShare(), 0, 'nothing ran yet');
  const item = group.submit(1);
  // Busy for two time constants (250 ms each): 1 − e⁻² ≈ 0.86 of the recent past.
  await sleep(500);
  const busy = group.busyShare();
  assert.ok(busy > 0.8, `busy share ${busy} after 500 ms with a transaction open`);
  await endNext();
  await item;
  await sleep(500);
  const idle = group.busyShare();
  assert.ok(idle < 0.2, `busy share ${idle} 500 ms after the last transaction ended`);
});

test("beforeBatch: items submitted while a slot waits for it join that slot's batch", async () => {
  const batches: number[][] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let asked = 0;
  const group = new GroupCommit<number, number>((items) => (batches.push(items), Promise.resolve(items)), {
    maxBatch: 10,
    maxInFlight: 2,
    retryAlone: () => false,
    beforeBatch: () => (asked++, gate),
  });

  const submitted = [1, 2, 3].map((item) => group.submit(item));
  assert.equal(asked, 1, 'one slot waits: the queue fits its batch');
  open();

  assert.deepEqual(await Promise.all(submitted), [1, 2, 3]);
  assert.deepEqual(batches, [[1, 2, 3]]);
});

test('a submitter that timed out before a transaction took its item: the item never commits; one already taken still does', async () => {
  const batches: number[][] = [];
  const ends: Array<() => void> = [];
  const group = new GroupCommit<number, number>(
    (items) => {
      batches.push(items);
      return new Promise((resolve) => ends.push(() => resolve(items)));
    },
    { maxBatch: 10, maxInFlight: 1, retryAlone: () => false, timeoutMs: 20 },
  );
  const taken = group.submit(1);
  const queued = group.submit(2);
  await Promise.all([assert.rejects(taken, /not committed within 20 ms/), assert.rejects(queued, /not committed within 20 ms/)]);

  ends.shift()!(); // the transaction that hung ends after all
  const later = group.submit(3);
  while (ends.length === 0) await new Promise((resolve) => setImmediate(resolve));
  ends.shift()!();
  assert.equal(await later, 3);
  assert.deepEqual(batches, [[1], [3]]);
});
