// The worker recovers from half-open database connections on its own, within the query deadline,
// as webhook intake does: a partition or failover that leaves connections open with nobody
// answering must not stop fulfilment until TCP gives up (about 15 minutes). While it cannot make
// progress, it says so (/healthz, /metrics).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { lastMaintenanceRun } from '../../src/db/maintenance-runs.js';
import { Readiness } from '../../src/http/readiness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, grantsOf, paidEvent } from '../support/factories.js';
import { lockedJobs } from '../support/jobs.js';
import { partitionableLink, type PartitionableLink } from '../support/partitionable-link.js';
import { ADMIN_TOKEN, startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

// Tight enough for a quick test; production's deadline is 20 s (src/db/database.ts).
const QUERY_DEADLINE_MS = 1_000;
// Above the 2 s poll interval plus a fetch, as production's 30 s is above its deadline.
const STALL_AFTER_MS = 4_000;

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database.close();
});

async function serviceBehind(link: PartitionableLink): Promise<TestService> {
  return startTestService(database, {
    databaseUrl: link.url,
    queryDeadlineMs: QUERY_DEADLINE_MS,
    workerOptions: { stallAfterMs: STALL_AFTER_MS },
    // No sweep during the test: recovery must not need one.
    env: { SWEEP_CRON: '0 0 1 1 *' },
  });
}

/** Delivers as Stripe does: a 5xx (the claim on a frozen connection) is retried until acknowledged. */
async function deliverUntilAcknowledged(service: TestService, event: unknown): Promise<void> {
  await waitFor('the delivery to be acknowledged', async () => (await service.deliver(event)).status === 200, { timeoutMs: 10_000, intervalMs: 200 });
}

test('connections frozen mid-flight: a new event is fulfilled within a few deadlines, without redelivery or sweep', async () => {
  const link = await partitionableLink(database.url);
  const service = await serviceBehind(link);
  try {
    // Warm: the worker's LISTEN connection and pooled connections are open and in use.
    const warm = await givenOrder(database);
    const warmEvent = paidEvent(warm);
    assert.equal((await service.deliver(warmEvent)).status, 200);
    assert.equal((await finishedEvent(database, warmEvent.id)).status, 'processed');
    // Its job's completion is not caught by the freeze: one the server committed but whose answer
    // froze would be retried by graphile-worker 3 s later, after this test has closed the pools.
    await waitFor('the warm job to be completed', async () => (await lockedJobs(database.db)) === 0);

    link.freeze({ alsoNew: false });
    const order = await givenOrder(database);
    const event = paidEvent(order);
    await deliverUntilAcknowledged(service, event);

    // Without a deadline on graphile-worker's own queries its job fetch waits on a frozen
    // connection, and the event stays 'processing' until the connection is reset.
    const row = await finishedEvent(database, event.id, { timeoutMs: 15_000 });
    assert.equal(row.status, 'processed');
    assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
    assert.equal(await lastMaintenanceRun(database.db, 'sweep'), null);
    // And no job is left locked for graphile-worker to run again hours later: a completion sent
    // on a frozen connection is retried on a fresh one (after graphile-worker's 3 s or more).
    await waitFor('no job to be left locked', async () => (await lockedJobs(database.db)) === 0, { timeoutMs: 15_000 });

    // Both runners (fulfilment, modules) have found their way back to the database.
    await waitFor('/healthz to answer 200', async () => (await fetch(`${service.url}/healthz`)).status === 200);
    const metrics = await (await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    assert.match(metrics, /^stripe_inbox_worker_stalled\{runner="fulfilment"\} 0$/m);
    assert.match(metrics, /^stripe_inbox_worker_progress_age_seconds\{runner="modules"\} [\d.e-]+$/m);
  } finally {
    // The partition ends first: a service stopping on frozen connections would wait for them.
    link.close();
    await service.close();
  }
});

test('a worker that cannot reach its database says so on /healthz, and recovers when the partition ends', async () => {
  const link = await partitionableLink(database.url);
  const service = await serviceBehind(link);
  try {
    assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
    link.freeze({ alsoNew: true });

    const stalled = await waitFor('/healthz to report the stall', async () => {
      const reply = await fetch(`${service.url}/healthz`);
      return reply.status === 503 && ((await reply.json()) as { ok: boolean; reason: string });
    });
    assert.equal(stalled.ok, false);
    assert.match(stalled.reason, /^the (fulfilment|modules) job loop has made no progress for \d+ s/);

    link.thaw();
    await waitFor('/healthz to answer 200 again', async () => (await fetch(`${service.url}/healthz`)).status === 200, { timeoutMs: 15_000 });
    const order = await givenOrder(database);
    const event = paidEvent(order);
    await deliverUntilAcknowledged(service, event);
    assert.equal((await finishedEvent(database, event.id)).status, 'processed');
    // Its job completed too. Also before the partition ends: graphile-worker 0.18 does not await
    // a job's completion, so one cut off by link.close() is an unhandled rejection (logged in
    // production, src/logger.ts) that fails whichever test is running.
    await waitFor('no job to be left locked', async () => (await lockedJobs(database.db)) === 0, { timeoutMs: 15_000 });
  } finally {
    // The partition ends first: a service stopping on frozen connections would wait for them.
    link.close();
    await service.close();
  }
});

test('a stalled job loop takes ROLE=worker out of readiness, but not a process that also takes webhooks', async () => {
  const reasons = { stalled: 'the fulfilment job loop has made no progress for 31 s' };
  for (const [gatesReadiness, expected] of [
    [true, { ready: false, reason: reasons.stalled }],
    [false, { ready: true }],
  ] as const) {
    const readiness = new Readiness(database.pool);
    readiness.markMigrated();
    readiness.watchJobLoop(() => reasons.stalled, { gatesReadiness });
    assert.deepEqual(await readiness.check(), expected);
    assert.deepEqual(readiness.live(), { ready: false, reason: reasons.stalled });
  }
});
