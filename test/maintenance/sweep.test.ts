// The sweep against real rows and real graphile-worker jobs (docs/design.md, invariants 7 and 8):
// it takes exactly the abandoned rows, at the threshold, never one a live transaction holds, never
// a failed one, never one whose job waits in its backoff, from this release or the one before; and
// parallel sweeps claim disjoint rows. Jobs are handled through graphile-worker's public interface
// only: a "dead worker" is a real worker that took its jobs and holds them without working.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { claimEvents, replayEvents } from '../../src/events/event-store.js';
import { sampleEvent } from '../../src/stripe/sample-events.js';
import { sweepStaleEvents } from '../../src/maintenance/sweep.js';
import { databaseForFile } from '../support/database.js';
import { deleteJobs, fulfilmentJobs, holdJobs, jobOf, lockedLongerThan, type JobHolder } from '../support/jobs.js';
import { waitFor } from '../support/wait-for.js';
import { incomingEvent } from '../support/factories.js';

const STALE_AFTER_MS = 60_000;
const options = { staleAfterMs: STALE_AFTER_MS, maxAttempts: 3 };
// For a job a dead worker locked: its lock must be older than the threshold, and the database's
// clock is the only one the sweep reads, so these tests use a short threshold and wait it out.
const SHORT_STALE_MS = 300;
const short = { ...options, staleAfterMs: SHORT_STALE_MS };

const database = databaseForFile();
let holder: JobHolder | undefined;
beforeEach(async () => {
  await sql`truncate stripe_events, maintenance_runs`.execute(database.db);
  await deleteJobs(database.db);
});
afterEach(async () => {
  await holder?.release();
  holder = undefined;
});

/** Claims events as the webhook does, then ages the rows' last enqueue; their jobs wait. */
async function givenClaimed(count: number, ageMs = STALE_AFTER_MS + 1_000): Promise<string[]> {
  const events = Array.from({ length: count }, () => sampleEvent('charge.succeeded', { id: 'ch_1', object: 'charge' }));
  await claimEvents(database.db, events.map(incomingEvent), options);
  const ids = events.map((e) => e.id);
  await sql`update stripe_events set enqueued_at = ${new Date(Date.now() - ageMs)} where event_id = any(${ids})`.execute(database.db);
  return ids;
}

/** Claimed long ago, and their jobs gone (completed elsewhere, or never committed by an old release). */
async function givenAbandoned(count: number, ageMs?: number): Promise<string[]> {
  const ids = await givenClaimed(count, ageMs);
  await deleteJobs(database.db, ids);
  return ids;
}

/** Claimed long ago, and their jobs taken by a worker that died holding them, longer ago than `staleAfterMs`. */
async function givenHeldByDeadWorker(count: number, jobs = 1): Promise<string[]> {
  const ids = await givenClaimed(count);
  holder = await holdJobs(database, jobs);
  await lockedLongerThan(database.db, holder, SHORT_STALE_MS);
  return ids;
}

async function row(eventId: string) {
  return database.db.selectFrom('stripe_events').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow();
}

/** Adds a job as a release before job keys did: no key (or `stripe_event:<id>`), added with the row's last enqueue. */
async function givenJobOfPreviousRelease(eventId: string, payload: unknown, key: string | null): Promise<string> {
  await deleteJobs(database.db, [eventId]);
  // One statement, so one now(): the row's enqueued_at is the job's created_at, to the microsecond.
  const { rows } = await sql<{ id: string }>`
    with job as (
      select id, created_at from graphile_worker.add_job('process_stripe_event', ${JSON.stringify(payload)}::json, max_attempts => 3, job_key => ${key}::text)
    )
    update stripe_events set job_key = null, enqueued_at = job.created_at from job where event_id = ${eventId}
    returning job.id`.execute(database.db);
  return rows[0]!.id;
}

describe('which rows the sweep takes', () => {
  test('a row abandoned by a dead worker is re-enqueued with a fresh job, counted as an attempt', async () => {
    const [id] = await givenHeldByDeadWorker(1);
    const result = await sweepStaleEvents(database.db, short);
    assert.deepEqual({ reclaimed: result.reclaimed, failed: result.failed }, { reclaimed: 1, failed: 0 });
    const swept = await row(id!);
    assert.equal(swept.status, 'processing');
    assert.equal(swept.attempts, 1);
    assert.ok(Date.now() - swept.enqueued_at.getTime() < STALE_AFTER_MS);
    // The dead worker's job stays locked (graphile-worker frees it after 4 hours, and it then finds
    // nothing to do); a new job carrying the event waits.
    assert.deepEqual(
      holder!.jobs.map((j) => j.eventIds),
      [[id]],
    );
    const jobs = await fulfilmentJobs(database.db);
    assert.deepEqual(
      jobs.map((j) => ({ id: j.id, locked: j.locked_at !== null })),
      [
        { id: holder!.jobs[0]!.id, locked: true },
        { id: (await jobOf(database.db, id!))!.id, locked: false },
      ],
    );
  });

  test('a row whose job vanished is re-enqueued', async () => {
    const [id] = await givenAbandoned(1);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 1);
    assert.equal((await jobOf(database.db, id!))?.locked_at, null);
    assert.equal((await fulfilmentJobs(database.db)).length, 1);
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
    const [id] = await givenClaimed(1);
    const job = (await jobOf(database.db, id!))!;
    const runAt = new Date(Date.now() + 3_600_000);
    await sql`select graphile_worker.reschedule_jobs(array[${job.id}]::bigint[], run_at => ${runAt}, attempts => 2)`.execute(database.db);
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 0);
    assert.deepEqual(
      (await fulfilmentJobs(database.db)).map((j) => j.run_at.getTime()),
      [runAt.getTime()],
    );
    assert.equal((await row(id!)).attempts, 0);
  });

  test('events carried by a waiting batch job are not taken', async () => {
    // 30 events claimed together travel in two jobs (25 + 5), both still waiting.
    const ids = await givenClaimed(30);
    assert.deepEqual(
      (await fulfilmentJobs(database.db)).map((j) => j.event_ids.length).sort((a, b) => b - a),
      [25, 5],
    );
    assert.equal((await sweepStaleEvents(database.db, options)).reclaimed, 0);
    assert.deepEqual(await database.db.selectFrom('stripe_events').select('attempts').distinct().execute(), [{ attempts: 0 }]);
    assert.deepEqual((await fulfilmentJobs(database.db)).flatMap((j) => j.event_ids).sort(), [...ids].sort());
  });

  test('of two jobs from one claim, the events of the dead worker’s job are taken, those of the waiting one are not', async () => {
    // 30 events claimed together: jobs of 25 and 5, added in one transaction (one created_at).
    await givenHeldByDeadWorker(30, 1);
    const result = await sweepStaleEvents(database.db, short);
    assert.deepEqual([...result.event_ids].sort(), [...holder!.jobs[0]!.eventIds].sort());
  });

  test('a job a worker fetched moments ago is left alone, though the row is not locked yet', async () => {
    // Under a backlog a live worker can hold a job while it waits for a pooled connection.
    const [id] = await givenClaimed(1);
    holder = await holdJobs(database, 1);
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
    assert.deepEqual(await fulfilmentJobs(database.db), [], 'no new job for a failed event');
  });

  test('a dry run reports what a run would do and changes nothing; a real run records when it ran', async () => {
    const ids = await givenAbandoned(3);
    // One of them is on its last attempt: the run would end it failed, and the dry run says so.
    await sql`update stripe_events set attempts = 2 where event_id = ${ids[2]!}`.execute(database.db);
    const dry = await sweepStaleEvents(database.db, { ...options, dryRun: true });
    assert.deepEqual([...dry.event_ids].sort(), [...ids].sort());
    assert.deepEqual({ reclaimed: dry.reclaimed, failed: dry.failed }, { reclaimed: 2, failed: 1 });
    assert.equal((await row(ids[0]!)).attempts, 0);
    assert.deepEqual(await fulfilmentJobs(database.db), []);
    const { rows: before } = await sql`select * from maintenance_runs`.execute(database.db);
    assert.equal(before.length, 0);
    await sweepStaleEvents(database.db, options);
    const { rows } = await sql<{ last_result: unknown }>`select last_result from maintenance_runs where name = 'sweep'`.execute(database.db);
    assert.deepEqual(rows[0]?.last_result, { reclaimed: 2, failed: 1, waits_expired: 0, batches: 1 });
  });

  test('--limit bounds the rows taken in one run', async () => {
    await givenAbandoned(5);
    const result = await sweepStaleEvents(database.db, { ...options, limit: 2, batchSize: 1 });
    assert.equal(result.reclaimed, 2);
    assert.equal(result.batches, 2);
  });
});

describe('jobs of the release before job keys (a rolling deploy)', () => {
  test('a keyless batch job and a single-event job, waiting or in their backoff, keep their events; once gone, the events are taken', async () => {
    const [batch, single, backoff] = await givenClaimed(3);
    await givenJobOfPreviousRelease(batch!, [{ eventId: batch }], null);
    await givenJobOfPreviousRelease(single!, { eventId: single }, `stripe_event:${single}`);
    const inBackoff = await givenJobOfPreviousRelease(backoff!, [{ eventId: backoff }], null);
    await sql`select graphile_worker.reschedule_jobs(array[${inBackoff}]::bigint[], run_at => now() + interval '1 hour', attempts => 2)`.execute(database.db);
    // Their rows were enqueued when their jobs were added: wait until that is past the threshold.
    await waitFor('the previous release’s enqueue to age past the threshold', async () => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from stripe_events where enqueued_at < now() - make_interval(secs => ${SHORT_STALE_MS / 1000})`.execute(database.db);
      return rows[0]!.n === 3;
    });
    assert.equal((await sweepStaleEvents(database.db, short)).reclaimed, 0);
    assert.deepEqual(await database.db.selectFrom('stripe_events').select('attempts').distinct().execute(), [{ attempts: 0 }]);

    await deleteJobs(database.db);
    const result = await sweepStaleEvents(database.db, short);
    assert.deepEqual([...result.event_ids].sort(), [batch, single, backoff].sort());
    assert.equal((await fulfilmentJobs(database.db)).flatMap((j) => j.event_ids).length, 3, 'each in a new keyed job');
  });
});

describe("how the sweep finds an event's job", () => {
  /** The event's job_key names a job that exists and was added in the transaction of its last enqueue. */
  async function jobOfLastEnqueue(eventId: string): Promise<boolean> {
    const job = await jobOf(database.db, eventId);
    return job !== undefined && job.created_at.getTime() === (await row(eventId)).enqueued_at.getTime();
  }

  // The same transaction also keeps the previous release's sweep right during a deploy: it finds
  // an event's job by created_at = enqueued_at.
  test('claim, replay and reclaim each add the job in the transaction that sets enqueued_at and job_key', async () => {
    const event = sampleEvent('charge.succeeded', { id: 'ch_1', object: 'charge' });
    await claimEvents(database.db, [incomingEvent(event)], options);
    assert.ok(await jobOfLastEnqueue(event.id), 'claim');
    await replayEvents(database.db, [event.id], options);
    assert.ok(await jobOfLastEnqueue(event.id), 'replay');
    await deleteJobs(database.db);
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
    // Each sweep batch goes into jobs of at most 25, and each event into one waiting job.
    const jobs = await fulfilmentJobs(database.db);
    assert.ok(jobs.every((j) => j.event_ids.length <= 25));
    assert.deepEqual(
      jobs
        .filter((j) => j.locked_by === null)
        .flatMap((j) => j.event_ids)
        .sort(),
      [...ids].sort(),
    );
  });
});
