// Part 2, drain (issue target 2). A backlog of claimed checkout.session.completed events for
// pending orders, fulfilled by one service process with ROLE=worker, against bare graphile-worker
// draining as many no-op jobs at the same concurrency and pool size. Both backlogs are in place
// before the process starts; both are timed by polling the remaining count (support/drain-timer.ts).
// The machine's speed drifts (a shared host), so the full run times the baseline before and after
// the service and compares the service with the mean of the two.
import { claimEvents } from '../../src/events/event-store.js';
import { attachCheckoutSession, createOrder } from '../../src/modules/credits/orders.js';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import { timeDrain } from '../support/drain-timer.js';
import type { BenchOptions } from '../support/options.js';
import { spawnBaseline, spawnBenchService } from '../support/processes.js';
import { ratio, type Figure } from '../support/report.js';
import { serviceEnv } from '../support/service-env.js';
import { BENCH_PACKAGE, eventBodies, type EventBodies } from '../support/webhook-events.js';

const FULL = { events: 20_000, timeoutMs: 300_000, baselineRuns: 2 };
const SHORT = { events: 200, timeoutMs: 60_000, baselineRuns: 1 };
// Events claimed together, so carried by one job (src/worker/job-queue.ts): what a claim held at the
// ingest bench's 50 connections (about ten, docs/benchmarks.md), not the most a job may carry. A
// backlog after an outage arrives through the same webhook, so its jobs look the same.
const CLAIM_BATCH = 10;
// No more than the bench pool's connections: a seeder waiting for a connection could hit the
// pool's 5 s connection timeout on a busy machine.
const SEED_PARALLEL = 4;
const MAX_ATTEMPTS = 10;

async function inParallel(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < count) await fn(next++);
  }));
}

/** Pending orders, then their events claimed and enqueued as the webhook would (claimEvents). */
async function seedBacklog(db: BenchDatabase, events: EventBodies): Promise<void> {
  await inParallel(events.count, SEED_PARALLEL, async (i) => {
    const order = await createOrder(db.db, { orderId: events.orderId(i), packageId: BENCH_PACKAGE.id, accountId: `acct_bench_${i}`, email: null });
    if (!order) throw new Error(`package ${BENCH_PACKAGE.id} is missing`);
    await attachCheckoutSession(db.db, order.order_id, events.sessionId(i));
  });
  await inParallel(Math.ceil(events.count / CLAIM_BATCH), SEED_PARALLEL, async (i) => {
    const from = i * CLAIM_BATCH;
    const batch = Array.from({ length: Math.min(CLAIM_BATCH, events.count - from) }, (_, k) => events.incoming(from + k));
    await claimEvents(db.db, batch, { maxAttempts: MAX_ATTEMPTS });
  });
}

/**
 * Statistics for the tables just filled, before a drain is timed. Otherwise the first drain ran
 * on a table whose statistics said "empty" until autovacuum caught up in the middle of it, and a
 * second run of the same baseline came out ~1.8x faster.
 */
async function analyze(db: BenchDatabase): Promise<void> {
  // The whole database: graphile-worker's job table is private to it, named by no public interface.
  await db.pool.query('vacuum analyze');
}

async function count(db: BenchDatabase, query: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(query);
  return rows[0]!.n;
}

export async function benchDrain(options: BenchOptions): Promise<Figure[]> {
  const size = options.short ? SHORT : FULL;
  const concurrency = String(options.concurrency);
  // What main.ts gives ROLE=worker: concurrency + 2 + graphile-worker's 3; the baseline gets the same.
  const poolSize = String(options.concurrency + 5);
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: SEED_PARALLEL, settings: options.dbSettings });
  try {
    const timeBaseline = async () => {
      options.log(`drain: ${size.events} no-op jobs, bare graphile-worker, concurrency ${concurrency}, pool ${poolSize}`);
      await db.pool.query(
        `select count(*) from graphile_worker.add_jobs(array(
           select row('noop', '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec from generate_series(1, $1::int)))`,
        [size.events],
      );
      await analyze(db);
      return timeDrain(
        () => spawnBaseline('noop-worker', { DATABASE_URL: db.url, CONCURRENCY: concurrency, POOL_SIZE: poolSize }),
        () => count(db, 'select count(*)::int as n from graphile_worker.jobs'),
        size.events,
        size.timeoutMs,
      );
    };
    const baselines = [await timeBaseline()];

    options.log(`drain: seeding ${size.events} orders and claimed events`);
    const events = eventBodies(size.events);
    await seedBacklog(db, events);
    const jobs = await count(db, 'select count(*)::int as n from graphile_worker.jobs');
    await analyze(db);
    options.log(`drain: the service, ROLE=worker, WORKER_CONCURRENCY=${concurrency}`);
    const service = await timeDrain(
      () => spawnBenchService(serviceEnv(db.url, 'worker', { WORKER_CONCURRENCY: concurrency, ...options.env }), options.nodeFlags),
      () => count(db, `select count(*)::int as n from stripe_events where status = 'processing'`),
      size.events,
      size.timeoutMs,
    );
    if (size.baselineRuns > 1) baselines.push(await timeBaseline());
    const baselineRate = baselines.reduce((total, b) => total + b.rate, 0) / baselines.length;

    const { rows } = await db.pool.query<{ processed: number; other: number; paid: number; span: number | null }>(`
      select count(*) filter (where status = 'processed')::int as processed,
             count(*) filter (where status <> 'processed')::int as other,
             (select count(*) from orders where status = 'paid')::int as paid,
             extract(epoch from max(finished_at) - min(finished_at))::float8 as span
      from stripe_events`);
    const outcome = rows[0]!;
    const dbRate = outcome.span ? outcome.processed / outcome.span : Number.NaN;
    return [
      {
        part: 'drain',
        name: 'bare graphile-worker',
        value: baselineRate,
        unit: 'jobs/s',
        note: `no-op task; ${baselines.map((b) => `${b.rate.toFixed(0)}/s in ${b.wallSeconds.toFixed(1)} s`).join(' before, ')}${baselines.length > 1 ? ' after the service' : ''}; from launch, start-up included`,
      },
      {
        part: 'drain',
        name: 'service',
        value: service.rate,
        unit: 'events/s',
        note: `${service.wallSeconds.toFixed(1)} s from launch; ${dbRate.toFixed(0)}/s by finished_at span; ${jobs} jobs of ${CLAIM_BATCH} events claimed together`,
      },
      { part: 'drain', name: 'service/graphile-worker', value: ratio(service.rate, baselineRate), unit: '×', target: { op: '≥', value: 0.5 } },
      {
        part: 'drain',
        name: 'events not processed',
        value: outcome.other,
        unit: '',
        target: { op: '≤', value: 0 },
        note: `${outcome.processed} processed, ${outcome.paid} orders paid`,
      },
    ];
  } finally {
    await db.drop();
  }
}
