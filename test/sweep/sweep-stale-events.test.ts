// The sweep against real rows and real graphile-worker jobs (DESIGN invariants 7 and 8): it
// takes exactly the abandoned rows, at the threshold, never one a live transaction holds, never a
// failed one, never one whose job waits in its backoff; and parallel sweeps claim disjoint rows.
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { claimEvents, replayEvents } from '../../src/events/event-store.js';
import { sampleEvent } from '../../src/stripe/sample-events.js';
import { sweepStaleEvents } from '../../src/sweep/sweep-stale-events.js';
import { databaseForFile } from '../support/database.js';
import { fulfilmentJobs, jobsCarrying } from '../support/jobs.js';

const STALE_AFTER_MS = 60_000;
const options = { staleAfterMs: STALE_AFTER_MS, maxAttempts: 3 };
const database = databaseForFile();
beforeEach(async () => {
  await sql`truncate stripe_events, maintenance_runs; delete from graphile_worker._private_jobs`.execute(database.db);
});

/** Claims events as the webhook does, then ages them and drops their jobs, as after a crash. */
async function givenAbandoned(count: number, ageMs = STALE_AFTER_MS + 1_000): Promise<string[]> {
  const events = Array.from({ length: count }, () => sampleEvent('charge.succeeded', { id: 'ch_1', object: 'charge' }));
  await claimEvents(
    database.db,
    events.map((e) => ({ eventId: e.id, type: e.type, objectId: 'ch_1', livemode: false, stripeCreatedAt: new Date(), rawBody: JSON.stringify(e) })),
    options,
  );
  const ids = events.map((e) => e.id);
  // Aged as a whole: the rows' last enqueue and the jobs it added (one transaction, one now()).
  const enqueuedAt = new Date(Date.now() - ageMs);
  await sql`update stripe_events set enqueued_at = ${enqueuedAt} where event_id = any(${ids})`.execute(database.db);
  await sql`update graphile_worker._private_jobs j set created_at = ${enqueuedAt}
            where exists (select 1 from job_event_ids(j.payload) id where id = any(${ids}))`.execute(database.db);
  // The worker that fetched the job died holding it: locked, never completed.
  await sql`update graphile_worker._private_jobs set locked_at = now() - interval '2 minutes', locked_by = 'dead-worker', attempts = 1`.execute(database.db);
  return ids;
}

async function row(eventId: string) {
  return database.db.selectFrom('stripe_events').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow();
}

const jobsFor = (eventId: string) => jobsCarrying(database.db, eventId);

describe('which rows the sweep takes', () => {
  test('a row abandoned by a dead worker is re-enqueued with a fresh job, counted as an attempt', async () => {
    const [id] = await givenAbandoned(1);
    const result = await sweepStaleEvents(database.db, options);
    assert.deepEqual({ reclaimed: result.reclaimed, failed: result.failed }, { reclaimed: 1, failed: 0 });
    const swept = await row(id!);
    assert.equal(swept.status, 'processing');
    assert.equal(swept.attempts, 1);
    assert.ok(Date.now() - swept.enqueued_at.getTime() < STALE_AFTER_MS);
    // The dead worker's job stays locked (graphile-worker frees it after 4 hours, and it then finds
    // nothing to do); a new job carrying the event waits.
    const jobs = await jobsFor(id!);
    assert.deepEqual(
      jobs.map((j) => ({ locked_by: j.locked_by, event_ids: j.event_ids })),
      [{ locked_by: 'dead-worker', event_ids: [id] }, { locked_by: null, event_ids: [id] }],
    );
  });

  test('a row whose job vanished is re-enqueued', async () => {
    const [id] = await givenAbandoned(1);
    await sql`delete from graphile_worker._private_jobs`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 1);
    assert.equal((await jobsFor(id!)).length, 1);
  });

  test('rows just inside the threshold stay, rows just outside are taken', async () => {
    const [inside] = await givenAbandoned(1, STALE_AFTER_MS - 2_000);
    const [outside] = await givenAbandoned(1, STALE_AFTER_MS + 1_000);
    const result = await sweepStaleEvents(database.db, options);
    assert.deepEqual(result.event_ids, [outside]);
    assert.equal((await row(inside!)).attempts, 0);
  });

  test('a row locked by a live transaction is not touched, however old', async () => {
    const [held, free] = await givenAbandoned(2);
    const worker = new pg.Client({ connectionString: database.url });
    await worker.connect();
    try {
      await worker.query('begin');
      await worker.query('select 1 from stripe_events where event_id = $1 for update', [held]);
      const result = await sweepStaleEvents(database.db, options);
      assert.deepEqual(result.event_ids, [free]);
      assert.equal((await row(held!)).attempts, 0);
    } finally {
      await worker.query('rollback');
      await worker.end();
    }
  });

  test('a failed row is never resurrected', async () => {
    const [id] = await givenAbandoned(1);
    await sql`update stripe_events set status = 'failed', last_error = 'amount mismatch', finished_at = now() where event_id = ${id!}`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 0);
    assert.equal((await row(id!)).status, 'failed');
  });

  test('a job waiting in its retry backoff keeps its run_at and the row is not counted', async () => {
    const [id] = await givenAbandoned(1);
    const runAt = new Date(Date.now() + 3_600_000);
    await sql`update graphile_worker._private_jobs set locked_at = null, locked_by = null, attempts = 2, run_at = ${runAt}`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 0);
    const jobs = await jobsFor(id!);
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]!.run_at.getTime(), runAt.getTime());
    assert.equal((await row(id!)).attempts, 0);
  });

  test('events carried by a waiting batch job are not taken, nor is one in a job of an earlier release', async () => {
    // 30 events claimed together travel in two jobs (25 + 5), both still waiting.
    const ids = await givenAbandoned(30);
    const [legacy] = await givenAbandoned(1);
    await sql`update graphile_worker._private_jobs set locked_at = null, locked_by = null, attempts = 0`.execute(database.db);
    assert.deepEqual((await fulfilmentJobs(database.db)).map((j) => j.event_ids.length).sort((a, b) => b - a), [25, 5, 1]);
    // A release before batch jobs enqueued { eventId } under the key stripe_event:<id>.
    await sql`update graphile_worker._private_jobs j set payload = json_build_object('eventId', ${legacy!}::text), key = ${`stripe_event:${legacy}`}
              where ${legacy!} in (select job_event_ids(j.payload))`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 0);
    assert.deepEqual(await database.db.selectFrom('stripe_events').select('attempts').distinct().execute(), [{ attempts: 0 }]);
    assert.equal(ids.length + 1, (await fulfilmentJobs(database.db)).flatMap((j) => j.event_ids).length);
  });

  test('of two jobs from one claim, the events of the dead worker’s job are taken, those of the waiting one are not', async () => {
    // 30 events claimed together: jobs of 25 and 5, added in one transaction (one created_at).
    const ids = await givenAbandoned(30);
    const jobs = await fulfilmentJobs(database.db);
    const waiting = jobs.find((j) => j.event_ids.length === 25)!;
    await sql`update graphile_worker._private_jobs set locked_at = null, locked_by = null, attempts = 0 where id = ${waiting.id}`.execute(database.db);
    const result = await sweepStaleEvents(database.db, options);
    assert.deepEqual([...result.event_ids].sort(), ids.filter((id) => !waiting.event_ids.includes(id)).sort());
  });

  test('a job a worker fetched moments ago is left alone, though the row is not locked yet', async () => {
    // Under a backlog a live worker can hold a job while it waits for a pooled connection.
    const [id] = await givenAbandoned(1);
    await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'live-worker'`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 0);
    assert.equal((await row(id!)).attempts, 0);
  });

  test('the reclaim that reaches MAX_ATTEMPTS ends the event failed, visibly', async () => {
    const [id] = await givenAbandoned(1);
    await sql`update stripe_events set attempts = 2, last_error = 'connection terminated' where event_id = ${id!}`.execute(database.db);
    const result = await sweepStaleEvents(database.db, options);
    assert.deepEqual({ reclaimed: result.reclaimed, failed: result.failed }, { reclaimed: 0, failed: 1 });
    const failed = await row(id!);
    assert.equal(failed.status, 'failed');
    assert.match(failed.last_error ?? '', /abandoned by its worker.*connection terminated/);
    assert.deepEqual((await jobsFor(id!)).map((j) => j.locked_by), ['dead-worker'], 'no new job for a failed event');
  });

  test('a dry run reports and changes nothing; a real run records when it ran', async () => {
    const ids = await givenAbandoned(3);
    const dry = await sweepStaleEvents(database.db, { ...options, dryRun: true });
    assert.deepEqual([...dry.event_ids].sort(), [...ids].sort());
    assert.equal((await row(ids[0]!)).attempts, 0);
    const { rows: before } = await sql`select * from maintenance_runs`.execute(database.db);
    assert.equal(before.length, 0);
    await sweepStaleEvents(database.db, options);
    const { rows } = await sql<{ last_result: unknown }>`select last_result from maintenance_runs where name = 'sweep'`.execute(database.db);
    assert.deepEqual(rows[0]?.last_result, { reclaimed: 3, failed: 0, batches: 1 });
  });

  test('--limit bounds the rows taken in one run', async () => {
    await givenAbandoned(5);
    const result = await sweepStaleEvents(database.db, { ...options, limit: 2, batchSize: 1 });
    assert.equal(result.reclaimed, 2);
    assert.equal(result.batches, 2);
  });
});

describe('how the sweep finds an event\'s job', () => {
  /** Whether a job carrying the event was added in the transaction of its last enqueue. */
  async function jobOfLastEnqueue(eventId: string): Promise<boolean> {
    const { rows } = await sql<{ found: boolean }>`
      select exists (
        select 1 from stripe_events e join graphile_worker._private_jobs j on j.created_at = e.enqueued_at
        where e.event_id = ${eventId} and e.event_id in (select job_event_ids(j.payload))) as found`.execute(database.db);
    return rows[0]!.found;
  }

  test('claim, replay and reclaim each add the job in the transaction that sets enqueued_at', async () => {
    const event = sampleEvent('charge.succeeded', { id: 'ch_1', object: 'charge' });
    await claimEvents(database.db, [{ eventId: event.id, type: event.type, objectId: 'ch_1', livemode: false, stripeCreatedAt: new Date(), rawBody: JSON.stringify(event) }], options);
    assert.ok(await jobOfLastEnqueue(event.id), 'claim');
    await replayEvents(database.db, [event.id], options);
    assert.ok(await jobOfLastEnqueue(event.id), 'replay');
    // Abandoned: its jobs locked by a dead worker, its last enqueue long ago.
    await sql`update graphile_worker._private_jobs set locked_at = now() - interval '2 minutes', locked_by = 'dead-worker'`.execute(database.db);
    await sql`update stripe_events set enqueued_at = now() - interval '1 hour'`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 1);
    assert.ok(await jobOfLastEnqueue(event.id), 'reclaim');
  });
});

describe('sweeps running at once', () => {
  test('five parallel sweeps over 1,000 stale rows reclaim each row exactly once', async () => {
    const ids = await givenAbandoned(1_000);
    // Separate pools: five processes' worth of connections, not five queries on one client.
    const pools = Array.from({ length: 5 }, () => openDatabase(database.url, { maxConnections: 2 }));
    try {
      const results = await Promise.all(pools.map((p) => sweepStaleEvents(p.db, { ...options, batchSize: 50 })));
      const claimed = results.flatMap((r) => r.event_ids);
      assert.equal(claimed.length, 1_000);
      assert.equal(new Set(claimed).size, 1_000, 'claims are disjoint');
      assert.ok(results.filter((r) => r.reclaimed > 0).length > 1, 'the work was shared');
    } finally {
      await Promise.all(pools.map((p) => p.close()));
    }
    const { rows } = await sql<{ attempts: number; n: number }>`
      select attempts, count(*)::int as n from stripe_events group by attempts`.execute(database.db);
    assert.deepEqual(rows, [{ attempts: 1, n: 1_000 }]);
    const waiting = (await fulfilmentJobs(database.db)).filter((j) => j.locked_by === null).flatMap((j) => j.event_ids);
    assert.deepEqual(waiting.sort(), [...ids].sort(), 'each event in exactly one waiting job');
  });
});
