// A rolling deploy across this upgrade (job keys, graphile-worker 0.17 → 0.18): the database
// starts as the previous release leaves it — events waiting in keyless batch jobs, one in its
// retry backoff, one held by a worker that died, one in a single-event job of an older release —
// then the new release migrates and runs while the previous one keeps claiming and its 0.17
// worker keeps fulfilling. Every order is granted once, every event ends processed, and the event
// in its backoff is left to it, not reclaimed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run as runPreviousWorker, type Runner as PreviousRunner } from 'graphile-worker-0.17';
import { sql } from 'kysely';
import type { OrderRow } from '../../src/modules/credits/tables.js';
import { migrate } from '../../src/db/migrate.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import { serviceDispatch } from '../support/handlers.js';
import { createLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { sweepStaleEvents } from '../../src/maintenance/sweep.js';
import { FulfilmentBatcher } from '../../src/fulfilment/fulfilment-batcher.js';
import { processStripeEventsTask } from '../../tasks/process_stripe_event.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { givenOrder, incomingEvent, paidEvent } from '../support/factories.js';
import { startTestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { claimAsPreviousRelease, migrateAsPreviousRelease, silentPreviousLogger } from './previous-release.js';
import { serviceMigrations } from '../../src/modules/index.js';

const MAX_ATTEMPTS = 10;
const logger = createLogger('silent');

/** A graphile-worker 0.17 process running the fulfilment task; `hold` makes it a worker that took its jobs and died. */
async function previousWorker(database: TestDatabase, { concurrency, hold = false }: { concurrency: number; hold?: boolean }) {
  const options = { maxAttempts: MAX_ATTEMPTS, dispatch: serviceDispatch(), maxJobs: 4 };
  const fulfil = processStripeEventsTask({ fulfilment: new FulfilmentBatcher(database.db, options), logger, metrics: new Metrics(database.db) });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let taken = 0;
  const runner: PreviousRunner = await runPreviousWorker({
    pgPool: database.pool,
    concurrency,
    noHandleSignals: true,
    pollInterval: 200,
    logger: silentPreviousLogger,
    taskList: {
      process_stripe_event: async (payload, helpers) => {
        taken++;
        if (hold) return released;
        // 0.17's helpers, as 0.18's task type names them: the task reads only helpers.job.id.
        return fulfil(payload, helpers as unknown as Parameters<typeof fulfil>[1]);
      },
    },
  });
  return { runner, taken: () => taken, stop: async () => (release(), runner.stop()) };
}

test('events, jobs and workers of the previous release are fulfilled once by the new one, during the overlap and after', async () => {
  const database = await createTestDatabase({ empty: true, maxConnections: 30 });
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const attempts = async (eventId: string) =>
      (await database.db.selectFrom('stripe_events').select('attempts').where('event_id', '=', eventId).executeTakeFirstOrThrow()).attempts;
    // The previous release runs alone.
    await migrateAsPreviousRelease(database.pool, logger);
    const orders: OrderRow[] = [];
    const paid = async (count: number) => {
      const batch = await Promise.all(Array.from({ length: count }, () => givenOrder(database)));
      orders.push(...batch);
      return batch.map((order) => paidEvent(order));
    };
    const claimOld = async (events: ReturnType<typeof paidEvent>[]) => claimAsPreviousRelease(database.db, events.map(incomingEvent), MAX_ATTEMPTS);

    // A worker took the first job and died holding it.
    const [abandoned] = await paid(1);
    await claimOld([abandoned!]);
    const dead = await previousWorker(database, { concurrency: 1, hold: true });
    cleanups.push(dead.stop);
    await waitFor('the dying worker to take its job', () => Promise.resolve(dead.taken() === 1));
    // Thirty events claimed together: two batch jobs, waiting.
    const waiting = await paid(30);
    await claimOld(waiting);
    // One event whose job failed once and sits in its backoff for a few seconds.
    const [retrying] = await paid(1);
    await claimOld([retrying!]);
    const {
      rows: [backoffJob],
    } = await sql<{ id: string }>`
      select id from graphile_worker.reschedule_jobs(array(
        select id from graphile_worker.jobs where created_at = (select enqueued_at from stripe_events where event_id = ${retrying!.id})),
        run_at => now() + interval '8 seconds', attempts => 1)`.execute(database.db);
    // One event in a single-event job of the release before batch jobs.
    const [single] = await paid(1);
    await sql`
      with job as (select created_at from graphile_worker.add_job('process_stripe_event', json_build_object('eventId', ${single!.id}::text), job_key => ${`stripe_event:${single!.id}`}::text, max_attempts => ${MAX_ATTEMPTS}::int))
      insert into stripe_events (event_id, type, object_id, livemode, stripe_created_at, payload, enqueued_at)
      select ${single!.id}, ${single!.type}, ${single!.data.object.id}, false, now(), ${JSON.stringify(single)}::jsonb, job.created_at from job`.execute(
      database.db,
    );

    // The new release migrates and starts; the previous one keeps claiming and fulfilling.
    await migrate(database.pool, logger, await serviceMigrations(), { runWorkerMigrations });
    const service = await startTestService(database, { env: { ROLE: 'all', WORKER_CONCURRENCY: '2' } });
    cleanups.push(() => service.close());
    const old = await previousWorker(database, { concurrency: 2 });
    cleanups.push(old.stop);
    const claimedByOld = await paid(10);
    const claimedByNew = await paid(10);
    await Promise.all([
      claimOld(claimedByOld),
      ...claimedByNew.map(async (event) => assert.equal((await service.deliver(event)).status, 200)),
      // Stripe retries a few deliveries the previous release had already stored.
      ...waiting.slice(0, 5).map(async (event) => assert.deepEqual((await service.deliver(event)).body, { received: true, duplicate: true })),
    ]);

    // The dead worker's event comes back through the new release's sweep (a short threshold
    // stands in for STALE_AFTER_SECONDS); nothing else is reclaimed meanwhile.
    await waitFor('the sweep to reclaim the dead worker’s event', async () => {
      await sweepStaleEvents(database.db, { staleAfterMs: 1_000, maxAttempts: MAX_ATTEMPTS });
      return (await attempts(abandoned!.id)) === 1;
    });
    // A sweep while the retrying event is past the threshold but still in its backoff.
    await waitFor('the retrying event to be older than the threshold', async () => {
      const { rows } = await sql<{ old: boolean }>`
        select enqueued_at < now() - interval '1 second' as old from stripe_events where event_id = ${retrying!.id}`.execute(database.db);
      return rows[0]!.old;
    });
    await sweepStaleEvents(database.db, { staleAfterMs: 1_000, maxAttempts: MAX_ATTEMPTS });
    const { rows: backoff } = await sql<{ waits: boolean }>`select run_at > now() as waits from graphile_worker.jobs where id = ${backoffJob!.id}`.execute(
      database.db,
    );
    assert.deepEqual(backoff, [{ waits: true }], 'the sweep ran while the job was still in its backoff');
    assert.equal(await attempts(retrying!.id), 0, 'the event in its backoff was left to its job, not reclaimed');
    await waitFor(
      'every event to finish',
      async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events where status = 'processing'`.execute(database.db);
        return rows[0]!.n === 0;
      },
      { timeoutMs: 30_000 },
    );

    const { rows: statuses } = await sql<{ status: string; n: number }>`select status, count(*)::int as n from stripe_events group by status`.execute(
      database.db,
    );
    assert.deepEqual(statuses, [{ status: 'processed', n: orders.length }]);
    const { rows: grants } = await sql<{ order_id: string; n: number }>`select order_id, count(*)::int as n from credit_grants group by order_id`.execute(
      database.db,
    );
    assert.equal(grants.length, orders.length, 'every order granted');
    assert.ok(
      grants.every((g) => g.n === 1),
      'no order granted twice',
    );
    assert.equal(await attempts(retrying!.id), 0, 'fulfilled by its own job after the backoff');
    assert.ok(old.taken() > 0, 'the previous release’s worker took part');
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await database.close();
  }
});
