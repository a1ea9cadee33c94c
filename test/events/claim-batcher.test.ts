// Group commit keeps the webhook's contract (docs/design.md, invariants 1 and 3): concurrent claims
// share transactions, yet each resolves only once its own row and job are committed; a duplicate in
// the same batch is a duplicate; one bad row does not fail its neighbours; a batch stores each
// event exactly as it came.
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type Db } from '../../src/db/database.js';
import { ClaimBatcher, ClaimTimeoutError } from '../../src/events/claim-batcher.js';
import { claimEvents, type IncomingEvent } from '../../src/events/event-store.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { deleteJobs, fulfilmentJobs } from '../support/jobs.js';
import { incomingEvent } from '../support/factories.js';
import { partitionableLink } from '../support/partitionable-link.js';
import { waitFor } from '../support/wait-for.js';

let database: TestDatabase;
let observer: Db;

before(async () => {
  database = await createTestDatabase();
  // Another pool: what it sees is what any other process would see, i.e. committed rows only.
  observer = openDatabase(database.url, { maxConnections: 2 });
});
after(async () => {
  await observer.close();
  await database.close();
});
beforeEach(async () => {
  await sql`truncate stripe_events`.execute(database.db);
  await deleteJobs(database.db);
});

function incoming(eventId = randomStripeId('evt')): IncomingEvent {
  return incomingEvent(sampleEvent('charge.succeeded', exampleObject('charge'), { id: eventId }));
}

async function committed(eventId: string): Promise<{ row: boolean; job: boolean }> {
  const { rows } = await sql<{ row: boolean; job: boolean }>`
    select exists (select 1 from stripe_events where event_id = ${eventId}) as row,
           exists (select 1 from graphile_worker.jobs j join stripe_events e on e.job_key = j.key where e.event_id = ${eventId}) as job`.execute(observer.db);
  return rows[0]!;
}

test('a batch stores each event with its own fields and its body byte for byte as sent, whatever characters it holds', async () => {
  const bodies = [
    { id: randomStripeId('evt'), note: 'quotes " and \\ backslashes, \u2028 separators, emoji 🧾, ünïcödé' },
    { id: randomStripeId('evt'), nested: [[1.5e10, -0.25, true, null], { '': '', 'a"b': ['\n\t'] }] },
    { id: randomStripeId('evt'), data: { object: {} } },
  ];
  const events: IncomingEvent[] = bodies.map((body, i) => ({
    eventId: body.id,
    type: `type.${i}`,
    objectId: i === 2 ? null : `obj_${i}`,
    livemode: i === 1,
    stripeCreatedAt: new Date(Date.UTC(2026, 0, i + 1)),
    snapshotEventId: body.id,
    // As Stripe sends it, whitespace included.
    rawBody: Buffer.from(JSON.stringify(body, null, i)),
  }));
  const outcomes = await claimEvents(database.db, [...events, events[0]!], { maxAttempts: 10 });
  assert.deepEqual(outcomes, ['claimed', 'claimed', 'claimed', 'duplicate']);
  const rows = await observer.db
    .selectFrom('stripe_events')
    .select(['event_id', 'type', 'object_id', 'livemode', 'stripe_created_at', 'payload'])
    .orderBy('type')
    .execute();
  assert.deepEqual(
    rows,
    events.map((e, i) => ({
      event_id: e.eventId,
      type: e.type,
      object_id: e.objectId,
      livemode: e.livemode,
      stripe_created_at: e.stripeCreatedAt,
      payload: bodies[i],
    })),
  );
  // The text Stripe signed, key order and whitespace included: its signature can be checked again.
  const { rows: texts } = await sql<{ text: string }>`select payload::text as text from stripe_events order by type`.execute(observer.db);
  assert.deepEqual(
    texts.map((r) => r.text),
    events.map((e) => e.rawBody.toString()),
  );
  for (const e of events) assert.deepEqual(await committed(e.eventId), { row: true, job: true });
});

test('200 concurrent claims share transactions, and each resolves only after its row and job are committed', async () => {
  const batcher = new ClaimBatcher(database.db, { maxAttempts: 10 });
  const events = Array.from({ length: 200 }, () => incoming());
  const checks = await Promise.all(
    events.map(async (event) => {
      const outcome = await batcher.claim(event);
      return { outcome, seen: await committed(event.eventId) };
    }),
  );
  for (const check of checks) assert.deepEqual(check, { outcome: 'claimed', seen: { row: true, job: true } });
  const { transactions, events: claimed } = batcher.stats;
  assert.equal(claimed, 200);
  assert.ok(transactions < 200 / 4, `group commit formed batches (${transactions} transactions for 200 claims)`);
});

test('the same event id twice, in one batch or across batches, is claimed once', async () => {
  const batcher = new ClaimBatcher(database.db, { maxAttempts: 10 });
  const event = incoming();
  const outcomes = await Promise.all(Array.from({ length: 30 }, () => batcher.claim(event)));
  assert.equal(outcomes.filter((o) => o === 'claimed').length, 1);
  assert.equal(outcomes.filter((o) => o === 'duplicate').length, 29);
  assert.deepEqual(
    (await fulfilmentJobs(database.db)).map((job) => job.event_ids),
    [[event.eventId]],
  );
});

test('one row the database refuses fails alone; its neighbours in the batch are claimed', async () => {
  await sql`
    create function reject_poison() returns trigger language plpgsql as $$
    begin
      if new.event_id = 'evt_poison' then raise exception 'poison row'; end if;
      return new;
    end $$;
    create trigger reject_poison before insert on stripe_events for each row execute function reject_poison()`.execute(database.db);
  try {
    const batcher = new ClaimBatcher(database.db, { maxAttempts: 10, maxInFlight: 1 });
    const good = Array.from({ length: 20 }, () => incoming());
    // The first claim occupies the one transaction slot, so the rest queue up into one batch.
    const results = await Promise.allSettled([incoming(), ...good.slice(0, 10), incoming('evt_poison'), ...good.slice(10)].map((e) => batcher.claim(e)));
    const rejected = results.filter((r) => r.status === 'rejected');
    assert.equal(rejected.length, 1);
    assert.match(String((rejected[0] as PromiseRejectedResult).reason), /poison row/);
    for (const event of good) assert.deepEqual(await committed(event.eventId), { row: true, job: true });
    assert.deepEqual(await committed('evt_poison'), { row: false, job: false });
  } finally {
    await sql`drop trigger reject_poison on stripe_events; drop function reject_poison()`.execute(database.db);
  }
});

test('a database that hangs instead of refusing: the claim gives up at its deadline', async () => {
  const link = await partitionableLink(database.url);
  const linked = openDatabase(link.url, { maxConnections: 2 });
  try {
    const batcher = new ClaimBatcher(linked.db, { maxAttempts: 10, claimTimeoutMs: 500 });
    assert.equal(await batcher.claim(incoming()), 'claimed');
    link.freeze({ alsoNew: true });
    const started = Date.now();
    await assert.rejects(batcher.claim(incoming()), ClaimTimeoutError);
    assert.ok(Date.now() - started < 2_000);
  } finally {
    link.close();
    await linked.close().catch(() => {});
  }
});

test('a connection that hangs is closed at the query deadline, and the next claims go through a new one', async () => {
  // The connections open at the freeze are a database host replaced without a reset; those
  // opened after it reach the new host.
  const link = await partitionableLink(database.url);
  const linked = openDatabase(link.url, { maxConnections: 2, queryDeadlineMs: 1_000 });
  try {
    const batcher = new ClaimBatcher(linked.db, { maxAttempts: 10, claimTimeoutMs: 500 });
    assert.equal(await batcher.claim(incoming()), 'claimed');
    link.freeze({ alsoNew: false });
    await assert.rejects(batcher.claim(incoming()), ClaimTimeoutError);
    // Without the deadline the frozen claim would hold the one claim slot until TCP gave up.
    const event = incoming();
    await waitFor('a claim through a new connection', async () => (await batcher.claim(event).catch(() => undefined)) !== undefined, { timeoutMs: 8_000 });
    assert.deepEqual(await committed(event.eventId), { row: true, job: true });
  } finally {
    link.close();
    await linked.close().catch(() => {});
  }
});
