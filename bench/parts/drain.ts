// Part 2, drain (issue target 2). A backlog of claimed checkout.session.completed events for
// pending orders, fulfilled by one service process with ROLE=worker, against bare graphile-worker
// draining as many no-op jobs at the same concurrency and pool size. Both backlogs are in place
// before the process starts; both are timed by polling the remaining count (support/drain-timer.ts).
// The machine's speed drifts (a shared host), so the full run times the baseline before and after
// the service and compares the service with the mean of the two.
//
// Beside it, the same backlog drained with outcome notifications on: APP_WEBHOOK_URL at the bench's
// receiver (support/notified-app.ts), so each fulfilment also writes a notification and its
// delivery in its transaction, and the delivery pump POSTs them once fulfilment pauses. Its
// target is on fulfilment (≥ 0.8 × the service without): credits are granted when an event is
// fulfilled, and the app is told after, at least once. It is also timed until the outbox is
// empty. Each run has a fresh database; `--rounds N` repeats the pair, in the other order every
// other round, and sums the rounds.
import { claimEvents } from '../../src/events/event-store.js';
import { waker } from '../../src/events/event-waits.js';
import { attachCheckoutSession, createOrder } from '../../src/modules/credits/orders.js';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import { timeDrain, type DrainTiming } from '../support/drain-timer.js';
import { notifiedOutcome, pendingDeliveries, startNotifiedApp, undeliveredFigure, type NotifiedApp, type NotifiedOutcome } from '../support/notified-app.js';
import type { BenchOptions } from '../support/options.js';
import { postgresCpu } from '../support/postgres-cpu.js';
import { spawnBaseline, spawnBenchService, type BenchChild } from '../support/processes.js';
import { ratio, type Figure } from '../support/report.js';
import { serviceEnv } from '../support/service-env.js';
import { cpuSeconds, summedCpuSeconds } from '../support/stats.js';
import { BENCH_PACKAGE, eventBodies, type EventBodies } from '../support/webhook-events.js';

// The timeout covers the notifying run's deliveries too: minutes for 20k in the first runs.
const FULL = { events: 20_000, timeoutMs: 600_000, baselineRuns: 2 };
const SHORT = { events: 200, timeoutMs: 60_000, baselineRuns: 1 };
// Events claimed together, so carried by one job (src/queue/job-queue.ts): what a claim held at
// the ingest bench's 50 connections (about ten, docs/benchmarks.md, "Drain"), not the most a job
// may carry. A backlog after an outage arrives through the same webhook, so its jobs look the same.
const CLAIM_BATCH = 10;
// No more than the bench pool's connections: a seeder waiting for a connection could hit the
// pool's 5 s connection timeout on a busy machine.
const SEED_PARALLEL = 4;
const MAX_ATTEMPTS = 10;
const PROCESSING = `select count(*)::int as n from stripe_events where status = 'processing'`;

async function inParallel(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** Pending orders, then their events claimed and enqueued as the webhook would (claimEvents). */
async function seedBacklog(db: BenchDatabase, events: EventBodies): Promise<void> {
  await inParallel(events.count, SEED_PARALLEL, async (i) => {
    const order = await createOrder(db.db, { orderId: events.orderId(i), packageId: BENCH_PACKAGE.id, accountId: `acct_bench_${i}`, email: null });
    if (!order) throw new Error(`package ${BENCH_PACKAGE.id} is missing`);
    await attachCheckoutSession(db.db, order.order_id, events.sessionId(i), waker({ maxAttempts: 10 }));
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

/**
 * CPU seconds of the service's whole life, start-up included (about as much in both variants, so
 * it cancels in their difference), of its database's backends, the bench's polls among them, and
 * of the app over the same time. From the launch, not from the start-up line: fulfilment starts
 * before it, and the deliveries of what it did then would land in a later window.
 */
interface Work {
  service: number;
  postgres: number;
  /** The receiver's, when it is notified. */
  app: number;
}

async function workWindow(db: BenchDatabase, app: NotifiedApp | undefined): Promise<{ stop(child: BenchChild): Promise<Work> }> {
  const postgres = await postgresCpu(db.pool, db.name);
  const appCpu = () => (app ? cpuSeconds(app.pid) : 0);
  const appBefore = appCpu();
  return { stop: async (child) => ({ service: summedCpuSeconds(child.pids), postgres: await postgres.stop(), app: appCpu() - appBefore }) };
}

interface ServiceRun {
  timing: DrainTiming<Work>;
  jobs: number;
  processed: number;
  other: number;
  /** Seconds from the first event finished to the last (finished_at). */
  span: number | null;
  notified: NotifiedOutcome;
}

/** One drain of a fresh backlog by the service, notifying `app` if given, until fulfilled (and, notifying, until every notification is delivered). */
async function timeService(options: BenchOptions, size: typeof FULL, app: NotifiedApp | undefined): Promise<ServiceRun> {
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: SEED_PARALLEL, settings: options.dbSettings });
  try {
    options.log(`drain: seeding ${size.events} orders and claimed events`);
    await seedBacklog(db, eventBodies(size.events));
    const jobs = await count(db, 'select count(*)::int as n from graphile_worker.jobs');
    await analyze(db);
    options.log(`drain: the service, ROLE=worker, WORKER_CONCURRENCY=${options.concurrency}${app ? `, notifying the bench's receiver` : ''}`);
    const timing = await timeDrain(
      () =>
        spawnBenchService(serviceEnv(db.url, 'worker', { WORKER_CONCURRENCY: String(options.concurrency), ...app?.env, ...options.env }), options.nodeFlags),
      () => count(db, PROCESSING),
      size.events,
      { timeoutMs: size.timeoutMs, window: () => workWindow(db, app), ...(app && { then: () => pendingDeliveries(db) }) },
    );
    const { rows } = await db.pool.query<{ processed: number; other: number; span: number | null }>(`
      select count(*) filter (where status = 'processed')::int as processed,
             count(*) filter (where status <> 'processed')::int as other,
             extract(epoch from max(finished_at) - min(finished_at))::float8 as span
      from stripe_events`);
    return { timing, jobs, ...rows[0]!, notified: await notifiedOutcome(db) };
  } finally {
    await db.drop();
  }
}

const sum = (runs: readonly ServiceRun[], of: (run: ServiceRun) => number) => runs.reduce((total, run) => total + of(run), 0);
const fulfilRate = (runs: readonly ServiceRun[]) => sum(runs, (r) => r.timing.counted.items) / sum(runs, (r) => r.timing.counted.seconds);
const deliveredRate = (runs: readonly ServiceRun[]) => sum(runs, (r) => r.timing.counted.items) / sum(runs, (r) => r.timing.then!.seconds);
/** Milliseconds of CPU per event fulfilled. */
const cpuPerEvent = (runs: readonly ServiceRun[], of: (work: Work) => number) =>
  (sum(runs, (r) => of(r.timing.window!)) * 1000) / sum(runs, (r) => r.processed);
const serviceCpu = (runs: readonly ServiceRun[]) => cpuPerEvent(runs, (w) => w.service + w.postgres);
const seconds = (runs: readonly ServiceRun[], of: (run: ServiceRun) => number) => runs.map((r) => of(r).toFixed(1)).join(', ');

function cpuNote(runs: readonly ServiceRun[], until: string): string {
  return `service ${cpuPerEvent(runs, (w) => w.service).toFixed(2)} ms + Postgres backends ${cpuPerEvent(runs, (w) => w.postgres).toFixed(2)} ms, from launch (start-up included) until ${until}`;
}

export async function benchDrain(options: BenchOptions): Promise<Figure[]> {
  const size = options.short ? SHORT : FULL;
  const rounds = options.rounds ?? 1;
  const concurrency = String(options.concurrency);
  // What main.ts gives ROLE=worker: concurrency + 2 + graphile-worker's 3; the baseline gets the same.
  const poolSize = String(options.concurrency + 5);
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: SEED_PARALLEL, settings: options.dbSettings });
  const app = await startNotifiedApp();
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
        { timeoutMs: size.timeoutMs },
      );
    };
    const baselines = [await timeBaseline()];
    const plain: ServiceRun[] = [];
    const notifying: ServiceRun[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const notifies of round % 2 === 0 ? [false, true] : [true, false]) {
        if (notifies) notifying.push(await timeService(options, size, app));
        else plain.push(await timeService(options, size, undefined));
      }
    }
    if (size.baselineRuns > 1) baselines.push(await timeBaseline());
    const baselineRate = baselines.reduce((total, b) => total + b.rate, 0) / baselines.length;
    const received = await app.received();

    const perRound = (runs: readonly ServiceRun[]) => (runs.length > 1 ? ` (rounds: ${runs.map((r) => r.timing.rate.toFixed(0)).join(', ')})` : '');
    const spanRate = (runs: readonly ServiceRun[]) => sum(runs, (r) => r.processed) / sum(runs, (r) => r.span ?? Number.NaN);
    const lag = (r: ServiceRun) => r.timing.then!.wallSeconds - r.timing.wallSeconds;
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
        value: fulfilRate(plain),
        unit: 'events/s',
        note: `${seconds(plain, (r) => r.timing.wallSeconds)} s from launch${perRound(plain)}; ${spanRate(plain).toFixed(0)}/s by finished_at span; ${plain[0]!.jobs} jobs of ${CLAIM_BATCH} events claimed together`,
      },
      { part: 'drain', name: 'service/graphile-worker', value: ratio(fulfilRate(plain), baselineRate), unit: '×', target: { op: '≥', value: 0.5 } },
      { part: 'drain', name: 'service CPU per event', value: serviceCpu(plain), unit: 'ms', note: cpuNote(plain, 'the last event was fulfilled') },
      {
        part: 'drain',
        name: 'service, notifying',
        value: fulfilRate(notifying),
        unit: 'events/s',
        note: `fulfilled; ${seconds(notifying, (r) => r.timing.wallSeconds)} s from launch${perRound(notifying)}; ${spanRate(notifying).toFixed(0)}/s by finished_at span; APP_WEBHOOK_URL at the bench's receiver`,
      },
      {
        part: 'drain',
        name: 'notifying/service, fulfilled',
        value: ratio(fulfilRate(notifying), fulfilRate(plain)),
        unit: '×',
        target: { op: '≥', value: 0.8 },
        note: `until every notification was delivered too: ${ratio(deliveredRate(notifying), fulfilRate(plain)).toFixed(2)} ×`,
      },
      {
        part: 'drain',
        name: 'service, notifying, until delivered',
        value: deliveredRate(notifying),
        unit: 'events/s',
        note: `the outbox empty ${seconds(notifying, (r) => r.timing.then!.wallSeconds)} s from launch, ${seconds(notifying, lag)} s after the last event was fulfilled`,
      },
      {
        part: 'drain',
        name: 'notifications delivered/s',
        value: sum(notifying, (r) => r.notified.delivered) / sum(notifying, (r) => r.notified.deliveredSpan ?? Number.NaN),
        unit: '/s',
        note: `first delivery to last (delivered_at); APP_WEBHOOK_CONCURRENCY ${options.env.APP_WEBHOOK_CONCURRENCY ?? 'default'} beside WORKER_CONCURRENCY ${concurrency}`,
      },
      {
        part: 'drain',
        name: 'notifying CPU per event',
        value: serviceCpu(notifying),
        unit: 'ms',
        note: `${cpuNote(notifying, 'the outbox was empty')}; the app (receiver) ${cpuPerEvent(notifying, (w) => w.app).toFixed(3)} ms, not counted`,
      },
      {
        part: 'drain',
        name: 'outbox CPU per fulfilled event',
        value: serviceCpu(notifying) - serviceCpu(plain),
        unit: 'ms',
        note: `notifying ÷ not: ${ratio(serviceCpu(notifying), serviceCpu(plain)).toFixed(2)} ×; service ${(cpuPerEvent(notifying, (w) => w.service) - cpuPerEvent(plain, (w) => w.service)).toFixed(2)} ms + Postgres ${(cpuPerEvent(notifying, (w) => w.postgres) - cpuPerEvent(plain, (w) => w.postgres)).toFixed(2)} ms`,
      },
      {
        part: 'drain',
        name: 'events not processed',
        value: sum([...plain, ...notifying], (r) => r.other),
        unit: '',
        target: { op: '≤', value: 0 },
        note: `${sum(plain, (r) => r.processed)} processed, ${sum(plain, (r) => r.notified.paid)} orders paid; notifying: ${sum(notifying, (r) => r.processed)} and ${sum(notifying, (r) => r.notified.paid)}`,
      },
      undeliveredFigure(
        'drain',
        'notifications not delivered',
        notifying.map((r) => r.notified),
        received,
      ),
    ];
  } finally {
    await app.stop();
    await db.drop();
  }
}
