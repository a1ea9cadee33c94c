// Ingest: seven servers (six unless named) get the same requests the same way (autocannon, 50
// connections, each request a unique signed event; a warm-up, then the measured run). The event
// is the workload (--event): checkout, a ~3.3 KB checkout.session.completed that pays a pending
// order (the default), or payment-intent, a ~3 KB payment_intent.succeeded that the service
// stores and records without acting on it (an external reviewer's workload). The servers:
// (a) ceiling: Express, no database; (b) naive: one INSERT per request
// through a pg pool of 10; (c) group-commit: the bare batched INSERT, no verification, claim or
// job; (d) web: the compiled service with ROLE=web; (e) all: the compiled service with the
// defaults (ROLE=all, the single container a small VPS runs), which also fulfils every event it
// accepts, on its own database, with the events' orders in it for checkout, so each fulfilment
// grants as in production; (f) all-notify, run only when named: `all` with outcome notifications on,
// APP_WEBHOOK_URL at the bench's receiver (support/notified-app.ts), measured until every
// notification is delivered too: against `all`, what the outbox costs an event (the issue: ingest
// unchanged); (g) split: the same work as two processes, ROLE=web and ROLE=worker (two containers
// of the image), which is how the second core is used today: measured beside `all`, without a
// target of its own.
//
// What is compared is work per event: CPU time of the server processes and of the Postgres
// backends serving them (/proc), over the measured run, per accepted event; for `all`,
// `all-notify` and `split`, until every event accepted is fulfilled (and notified). Beside it,
// counts no host changes: the WAL records and transactions per event, the system calls per event
// and, for a one-process service, its garbage collections. Throughput and p99 are compared to the
// naive handler's in the same run.
//
// The machine's speed drifts by up to 2× within a minute (a shared host), so the full run measures
// in rounds (two, or --rounds), the servers in one order and then in the reverse: each server's
// figure is over all rounds, and a drift that is linear in time weighs on all of them alike.
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import { postgresCpu } from '../support/postgres-cpu.js';
import { gcWindow, type GcCounts } from '../support/service-gc.js';
import { notifiedOutcome, pendingDeliveries, startNotifiedApp, undeliveredFigure, type NotifiedApp, type Received } from '../support/notified-app.js';
import { walWindow, type WalWritten } from '../support/postgres-wal.js';
import { spawnBaseline, spawnBenchService, spawnSplitService, type BenchChild } from '../support/processes.js';
import { ratio, type Figure } from '../support/report.js';
import { BENCH_TOKEN, BENCH_WEBHOOK_SECRET, serviceEnv } from '../support/service-env.js';
import { percentile, pollUntil, sampleRss, summedCpuSeconds, summedKb, systemCalls } from '../support/stats.js';
import { BENCH_PACKAGE, eventBodies, paymentIntentBodies, signatureHeader, type EventBodies, type WebhookBodies } from '../support/webhook-events.js';

const CONNECTIONS = 50;
// Enough unique events that a service never sees a repeat in either round: it has not outrun
// the bare group-commit insert (at most ≈ 7k req/s on the fastest host seen, so ≈ 85k requests per
// round of 12 s); the baselines start over each run.
// quietSeconds: how long a service that fulfils stays without load before its resident set is
// read again: two of src/trim-heap.ts's 10 s looks, plus margin.
const FULL = { warmupSeconds: 2, measureSeconds: 10, events: 200_000, rounds: 2, drainTimeoutMs: 600_000, quietSeconds: 25 };
const SHORT = { warmupSeconds: 0.5, measureSeconds: 2, events: 20_000, rounds: 1, drainTimeoutMs: 60_000, quietSeconds: 0 };
type Size = typeof FULL;

export const SERVERS = ['ceiling', 'naive', 'group-commit', 'web', 'all', 'all-notify', 'all-traced', 'split'] as const;
type ServerName = (typeof SERVERS)[number];
// all-notify and all-traced (all-notify with tracing on, exporting to the same receiver) run only
// when named (--servers): delivering the ~25k notifications of a round took minutes in the first
// runs (docs/benchmarks.md, Outcome notifications), more than the rest of the part together.
const DEFAULT_SERVERS = SERVERS.filter((name) => name !== 'all-notify' && name !== 'all-traced');

interface Requests {
  /** The Stripe event type every body carries. */
  type: string;
  bodies: Buffer[];
  signatures: string[];
  next: number;
}

interface Measured {
  result: autocannon.Result;
  /** 2xx answers during the warm-up: acknowledged too, so they must be stored too. */
  warmup2xx: number;
  /** Seconds the CPU was counted over: the measured run, and for `all` and `split` the drain after it. */
  cpuSeconds: number;
  /** CPU seconds used in that time: the server's processes, its Postgres backends, this (load generator) process. */
  serverCpu: number;
  postgresCpu: number;
  generatorCpu: number;
  rssMb?: { startMb: number; peakMb: number; hwmMb: number };
  /** Resident set after everything was fulfilled and `quietSeconds` passed without load. */
  quietRssMb?: number;
  /** `all`: seconds from the end of the load until nothing it accepted was still processing (or, notifying, undelivered). */
  drainSeconds?: number;
  /** WAL the server made Postgres write, from its start to its stop (warm-up and drain included). */
  wal?: WalWritten;
  /** System calls the server's processes made over the CPU window. */
  systemCalls: { reads: number; writes: number };
  /** A one-process service's garbage collections over the CPU window. */
  gc?: GcCounts;
}

async function load(url: string, requests: Requests, seconds: number): Promise<autocannon.Result> {
  const { bodies, signatures } = requests;
  return autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/webhooks/stripe',
        setupRequest: (request) => {
          const i = requests.next++ % bodies.length;
          return { ...request, body: bodies[i]!, headers: { 'content-type': 'application/json', 'stripe-signature': signatures[i]! } };
        },
      },
    ],
  });
}

const processing = async (db: BenchDatabase) =>
  (await db.pool.query<{ n: number }>("select count(*)::int as n from stripe_events where status = 'processing'")).rows[0]!.n;

/**
 * Until every event accepted is fulfilled and, for a server that notifies, every notification
 * delivered, after a load that ended at `loaded` (performance.now()). Autocannon stops with a
 * request in flight on most connections, which the server still accepts and commits (the rows
 * beyond the 2xx): up to the load's slowest answer later, so the look that counts comes after
 * that. Without it a server that keeps up (record-only events) was seen with nothing processing
 * before those claims committed, and stopped with them unfulfilled.
 */
const fulfilled = (server: Server, size: Size, load: { loaded: number; result: autocannon.Result }) =>
  pollUntil(
    `the service to fulfil every event it accepted${server.notifies ? ' and deliver their notifications' : ''}`,
    async () =>
      performance.now() - load.loaded > load.result.latency.max &&
      (await processing(server.db!)) === 0 &&
      (!server.notifies || (await pendingDeliveries(server.db!)) === 0),
    { timeoutMs: size.drainTimeoutMs, intervalMs: 20 },
  );

interface Server {
  start(): Promise<BenchChild>;
  /** The database whose backends serve it; none for the ceiling. */
  db?: BenchDatabase;
  /** The service's processes: their resident set is sampled. */
  service?: true;
  /** Fulfils what it accepts: measured until it has. */
  drains?: true;
  /** Notifies the app of what it fulfils: measured until it has. */
  notifies?: true;
  /** Its resident set is read again once it has stood quiet after the load. */
  quiet?: true;
}

async function measure(server: Server, child: BenchChild, requests: Requests, size: Size): Promise<Measured> {
  // Signed now: the service refuses signatures older than 300 s, and each server runs for seconds.
  const timestamp = Math.floor(Date.now() / 1000);
  requests.signatures = requests.bodies.map((body) => signatureHeader(body, BENCH_WEBHOOK_SECRET, timestamp));
  const rss = server.service ? sampleRss(child.pids) : undefined;
  const processCpu = () => summedCpuSeconds(child.pids);
  const calls = () => child.pids.map(systemCalls).reduce((t, c) => ({ reads: t.reads + c.reads, writes: t.writes + c.writes }), { reads: 0, writes: 0 });
  const warmup = await load(child.url, requests, size.warmupSeconds);
  // The window counts the events accepted in it, so it starts once the warm-up's are fulfilled:
  // otherwise it would also pay for fulfilling those, which it does not count.
  if (server.drains) await fulfilled(server, size, { loaded: performance.now(), result: warmup });
  // Scraped outside the CPU window at both ends: a scrape costs the service a status read.
  const gc = server.service && child.pids.length === 1 ? await gcWindow(child.url, BENCH_TOKEN) : undefined;
  const postgres = server.db ? await postgresCpu(server.db.pool, server.db.name) : undefined;
  const [serverCpu, callsBefore, generatorCpu, started] = [processCpu(), calls(), process.cpuUsage(), performance.now()];
  const result = await load(child.url, requests, size.measureSeconds);
  const loaded = performance.now();
  if (server.drains) await fulfilled(server, size, { loaded, result });
  const seconds = (performance.now() - started) / 1000;
  const generator = process.cpuUsage(generatorCpu);
  const [serverCpuUsed, callsAfter] = [processCpu() - serverCpu, calls()];
  const postgresCpuUsed = postgres ? await postgres.stop() : 0;
  const collections = await gc?.stop();
  return {
    result,
    warmup2xx: warmup['2xx'],
    cpuSeconds: seconds,
    serverCpu: serverCpuUsed,
    postgresCpu: postgresCpuUsed,
    generatorCpu: (generator.user + generator.system) / 1e6,
    systemCalls: { reads: callsAfter.reads - callsBefore.reads, writes: callsAfter.writes - callsBefore.writes },
    ...(collections && { gc: collections }),
    ...(rss && { rssMb: rss.stop() }),
    ...(server.drains && { drainSeconds: (performance.now() - loaded) / 1000 }),
    ...(server.quiet && size.quietSeconds > 0 && { quietRssMb: await quietRss(child, size.quietSeconds) }),
  };
}

/** The resident set once the service has stood without load for `seconds`: what a container holds between bursts. */
async function quietRss(child: BenchChild, seconds: number): Promise<number> {
  await sleep(seconds * 1000);
  return summedKb(child.pids, 'VmRSS') / 1024;
}

async function run(name: ServerName, server: Server, requests: Requests, size: Size, options: BenchOptions): Promise<Measured> {
  options.log(
    `ingest: ${name}: ${size.warmupSeconds} s warm-up + ${size.measureSeconds} s at ${CONNECTIONS} connections of ${requests.type}${server.drains ? ', then until fulfilled' : ''}`,
  );
  const child = await server.start();
  const wal = server.db ? await walWindow(server.db.pool) : undefined;
  let measured: Measured;
  try {
    measured = await measure(server, child, requests, size);
  } finally {
    await child.stop();
  }
  // Read once the server's backends have exited, so that every one has reported its counts.
  const written = await wal?.stop();
  return { ...measured, ...(written && { wal: written }) };
}

const sum = (runs: readonly Measured[], of: (m: Measured) => number) => runs.reduce((total, m) => total + of(m), 0);
const loadSeconds = (runs: readonly Measured[]) => sum(runs, (m) => m.result.duration);
const accepted = (runs: readonly Measured[]) => sum(runs, (m) => m.result['2xx']);
const rate = (runs: readonly Measured[]) => accepted(runs) / loadSeconds(runs);
const failures = (runs: readonly Measured[]) => sum(runs, (m) => m.result.non2xx + m.result.errors + m.result.timeouts);
/** Percentiles cannot be merged from autocannon's summaries: the mean over the rounds. */
const latency = (runs: readonly Measured[], p: 'p50' | 'p99') => sum(runs, (m) => m.result.latency[p]) / runs.length;
/** Milliseconds of CPU (server and its Postgres backends) per accepted event. */
const cpuPerEvent = (runs: readonly Measured[]) => ((sum(runs, (m) => m.serverCpu) + sum(runs, (m) => m.postgresCpu)) * 1000) / accepted(runs);

/** One round's CPU per event with its process and Postgres shares: a round the host slowed is dearer in both. */
function roundCpu(m: Measured): string {
  const share = (cpu: number) => ((cpu * 1000) / m.result['2xx']).toFixed(2);
  return `${cpuPerEvent([m]).toFixed(2)} (${share(m.serverCpu)} + ${share(m.postgresCpu)})`;
}

function serverFigures(name: ServerName, runs: readonly Measured[], server: Server): Figure[] {
  const ok = accepted(runs);
  const cores = (of: (m: Measured) => number) => (sum(runs, of) / sum(runs, (m) => m.cpuSeconds)).toFixed(2);
  const perRound = runs.length > 1 ? ` (rounds: ${runs.map((m) => (m.result['2xx'] / m.result.duration).toFixed(0)).join(', ')})` : '';
  const note = `${ok} × 2xx in ${loadSeconds(runs).toFixed(1)} s${perRound}, ${failures(runs)} non-2xx/errors; load generator ${cores((m) => m.generatorCpu)} cores`;
  const ms = (cpu: number) => ((cpu * 1000) / ok).toFixed(2);
  const drained =
    runs[0]?.drainSeconds === undefined
      ? ''
      : `, over the load and the ${sum(runs, (m) => m.drainSeconds!).toFixed(1)} s until fulfilled${server.notifies ? ' and notified' : ''}`;
  const perEvent = (of: (m: Measured) => number) => sum(runs, of) / ok;
  return [
    { part: 'ingest', name: `${name} req/s`, value: rate(runs), unit: 'req/s', note },
    { part: 'ingest', name: `${name} p50`, value: latency(runs, 'p50'), unit: 'ms' },
    { part: 'ingest', name: `${name} p99`, value: latency(runs, 'p99'), unit: 'ms' },
    {
      part: 'ingest',
      name: `${name} CPU per event`,
      value: cpuPerEvent(runs),
      unit: 'ms',
      note: `process ${ms(sum(runs, (m) => m.serverCpu))} ms + Postgres backends ${ms(sum(runs, (m) => m.postgresCpu))} ms${drained}; ${cores((m) => m.serverCpu)} + ${cores((m) => m.postgresCpu)} cores${runs.length > 1 ? `; rounds: ${runs.map(roundCpu).join(', ')} ms` : ''}${gcNote(runs)}`,
    },
    {
      part: 'ingest',
      name: `${name} system calls per event`,
      value: perEvent((m) => m.systemCalls.reads + m.systemCalls.writes),
      unit: '',
      note: `${perEvent((m) => m.systemCalls.reads).toFixed(2)} reads + ${perEvent((m) => m.systemCalls.writes).toFixed(2)} writes, by the server's processes (every thread) over the CPU window`,
    },
    ...walFigures(name, runs),
  ];
}

/** A one-process service's collections per 1,000 events and its main thread's pauses, over the CPU window. */
function gcNote(runs: readonly Measured[]): string {
  if (runs.length === 0 || !runs.every((m) => m.gc)) return '';
  const events = accepted(runs);
  const perThousand = (of: (gc: GcCounts) => number) => ((sum(runs, (m) => of(m.gc!)) * 1000) / events).toFixed(2);
  const pauseMs = (sum(runs, (m) => m.gc!.pauseSeconds) * 1000) / events;
  return `; garbage collection: ${perThousand((gc) => gc.full)} full and ${perThousand((gc) => gc.young)} young-generation collections per 1,000 events, ${pauseMs.toFixed(3)} ms of main-thread pauses per event`;
}

/**
 * WAL records per event: what the server makes Postgres write, in a unit no host changes. Over
 * each run from the server's start to its stop, per event acknowledged in it (warm-up included).
 */
function walFigures(name: ServerName, runs: readonly Measured[]): Figure[] {
  if (runs.length === 0 || !runs.every((m) => m.wal)) return [];
  const events = sum(runs, (m) => m.warmup2xx + m.result['2xx']);
  const per = (of: (wal: WalWritten) => number) => sum(runs, (m) => of(m.wal!)) / events;
  return [
    {
      part: 'ingest',
      name: `${name} WAL records per event`,
      value: per((wal) => wal.records),
      unit: '',
      note: `${per((wal) => wal.bytes).toFixed(0)} bytes, ${per((wal) => wal.fullPageImages).toFixed(2)} full-page images and ${per((wal) => wal.transactions).toFixed(2)} transactions per event (the bench's own polls among them); from start to stop${runs[0]!.drainSeconds === undefined ? '' : ', fulfilment included'}`,
    },
  ];
}

/**
 * What notifying costs `all`, both measured until their work was done: the issue wants ingest
 * unchanged, and the outbox's cost per fulfilled event stated.
 */
function outboxFigures(all: readonly Measured[], notifying: readonly Measured[]): Figure[] {
  const ms = (runs: readonly Measured[], of: (m: Measured) => number) => (sum(runs, of) * 1000) / accepted(runs);
  const peak = (runs: readonly Measured[]) => Math.max(...runs.map((m) => m.rssMb!.peakMb)).toFixed(0);
  return [
    {
      part: 'ingest',
      name: 'all-notify req/s ÷ all',
      value: ratio(rate(notifying), rate(all)),
      unit: '×',
      target: { op: '≥', value: 0.95 },
      note: `p99 ${ratio(latency(notifying, 'p99'), latency(all, 'p99')).toFixed(2)} ×; peak RSS ${peak(notifying)} MB against ${peak(all)} MB`,
    },
    {
      part: 'ingest',
      name: 'outbox CPU per fulfilled event',
      value: cpuPerEvent(notifying) - cpuPerEvent(all),
      unit: 'ms',
      note: `all-notify ÷ all ${ratio(cpuPerEvent(notifying), cpuPerEvent(all)).toFixed(2)} ×; process ${(ms(notifying, (m) => m.serverCpu) - ms(all, (m) => m.serverCpu)).toFixed(2)} ms + Postgres ${(ms(notifying, (m) => m.postgresCpu) - ms(all, (m) => m.postgresCpu)).toFixed(2)} ms, delivery included`,
    },
  ];
}

/**
 * What tracing costs an event that is fulfilled and notified, every span made and exported to the
 * receiver (docs/operations.md, "Tracing"): all-traced against all-notify, both until delivered.
 */
function tracingFigures(off: readonly Measured[], on: readonly Measured[], received: Received): Figure[] {
  const ms = (runs: readonly Measured[], of: (m: Measured) => number) => (sum(runs, of) * 1000) / accepted(runs);
  // The export also carries the warm-ups' spans.
  const exported = sum(on, (m) => m.warmup2xx + m.result['2xx']);
  return [
    {
      part: 'ingest',
      name: 'all-traced ÷ all-notify: req/s, CPU per event',
      value: ratio(rate(on), rate(off)),
      unit: '×',
      note: `CPU ${ratio(cpuPerEvent(on), cpuPerEvent(off)).toFixed(2)} ×: process ${(ms(on, (m) => m.serverCpu) - ms(off, (m) => m.serverCpu)).toFixed(3)} ms + Postgres ${(ms(on, (m) => m.postgresCpu) - ms(off, (m) => m.postgresCpu)).toFixed(3)} ms more an event; p99 ${ratio(latency(on, 'p99'), latency(off, 'p99')).toFixed(2)} ×`,
    },
    {
      part: 'ingest',
      name: 'all-traced export per event',
      value: received.traceBytes / exported,
      unit: 'bytes',
      note: `${received.traceExports} OTLP/HTTP JSON exports for ${exported} events (warm-ups included)`,
    },
  ];
}

/**
 * Latency of one small durable commit from one client: the floor under anything that commits
 * serially (a NOTIFY-ing commit holds a database-wide lock through its WAL flush).
 */
async function commitLatencyMs(db: BenchDatabase, commits: number): Promise<number> {
  await db.pool.query('create table bench_commit_probe (id int)');
  const times: number[] = [];
  for (let i = 0; i < commits; i++) {
    const started = performance.now();
    await db.pool.query('insert into bench_commit_probe values ($1)', [i]);
    times.push(performance.now() - started);
  }
  return percentile(times, 50);
}

/**
 * The pending orders the events pay, in one statement: ord_bench_<run>_<i> at the starter package's
 * price, each with the Checkout Session cs_bench_<run>_<i> stored, as POST /api/checkout stores it.
 */
async function seedOrders(db: BenchDatabase, events: EventBodies): Promise<void> {
  const prefix = events.orderId(0).slice(0, -1);
  const sessionPrefix = events.sessionId(0).slice(0, -1);
  await db.pool.query(
    `insert into orders (order_id, package_id, account_id, amount, currency, credits, checkout_session_id)
     select $1 || i, $2, 'acct_bench_' || i, $3, $4, p.credits, $6 || i
     from generate_series(0, $5::int - 1) as i, packages p where p.package_id = $2`,
    [prefix, BENCH_PACKAGE.id, BENCH_PACKAGE.amount, BENCH_PACKAGE.currency, events.count, sessionPrefix],
  );
}

async function storedCounts(db: BenchDatabase): Promise<{ events: number; jobs: number; processing: number }> {
  const { rows } = await db.pool.query<{ events: number; jobs: number; processing: number }>(
    `select (select count(*) from stripe_events)::int as events, (select count(*) from graphile_worker.jobs)::int as jobs,
            (select count(*) from stripe_events where status = 'processing')::int as processing`,
  );
  return rows[0]!;
}

/** Invariant 1 by count: every 2xx (warm-up included) has its row; requests still in flight when autocannon stopped may add rows without a counted 2xx. */
async function unstored(name: ServerName, runs: readonly Measured[], db: BenchDatabase, cycled: string): Promise<Figure> {
  const stored = await storedCounts(db);
  const acknowledged = sum(runs, (m) => m.warmup2xx + m.result['2xx']);
  return {
    part: 'ingest',
    name: `${name} 2xx without a row`,
    value: Math.max(0, acknowledged - stored.events),
    unit: '',
    target: { op: '≤', value: 0 },
    note: `${acknowledged} acknowledged, ${stored.events} events and ${stored.jobs} jobs stored${cycled}`,
  };
}

/** The most unique events a run may hold: each is a signed 3.3 KB body in memory (what ten rounds of the default need). */
export const MAX_INGEST_EVENTS = 1_000_000;

/** The run's sizes, from --short, --rounds and --warmup. */
export function ingestSize(options: Pick<BenchOptions, 'short' | 'rounds' | 'warmupSeconds'>): Size {
  const base = options.short ? SHORT : FULL;
  // More rounds (--rounds) need more unique events: as many per round as the default's.
  // So does a longer warm-up (--warmup): in proportion to a round's seconds of load.
  const rounds = options.rounds ?? base.rounds;
  const warmupSeconds = options.warmupSeconds ?? base.warmupSeconds;
  const longer = Math.max(1, (warmupSeconds + base.measureSeconds) / (base.warmupSeconds + base.measureSeconds));
  return { ...base, rounds, warmupSeconds, events: Math.ceil((base.events / base.rounds) * Math.max(rounds, base.rounds) * longer) };
}

export async function benchIngest(options: BenchOptions): Promise<Figure[]> {
  const size = ingestSize(options);
  // checkout pays orders, which the fulfilling servers' databases must hold; payment-intent needs none.
  const checkout = (options.event ?? 'checkout') === 'checkout' ? eventBodies(size.events) : undefined;
  const events: WebhookBodies = checkout ?? paymentIntentBodies(size.events);
  const requests: Requests = {
    type: events.type,
    bodies: Array.from({ length: events.count }, (_, i) => Buffer.from(events.body(i))),
    signatures: [],
    next: 0,
  };
  const bytes = requests.bodies.reduce((total, body) => total + body.length, 0) / requests.bodies.length;
  // Beside every target: the workload its ratio is for.
  const workload = `${events.type} events`;
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  const allDb = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  const notifyDb = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  const splitDb = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  const tracedDb = await createBenchDatabase(options.serverUrl, { maxConnections: 2, settings: options.dbSettings });
  const chosen = options.servers ? SERVERS.filter((name) => options.servers!.includes(name)) : DEFAULT_SERVERS;
  // Started with all-notify's (or all-traced's) first run: no other server sends it anything.
  let app: NotifiedApp | undefined;
  const notifiedApp = async () => (app ??= await startNotifiedApp());
  try {
    const commitMs = await commitLatencyMs(db, options.short ? 50 : 300);
    for (const [name, fulfilling] of [
      ['all', allDb],
      ['all-notify', notifyDb],
      ['all-traced', tracedDb],
      ['split', splitDb],
    ] as const) {
      if (checkout && chosen.includes(name)) await seedOrders(fulfilling, checkout);
    }
    const servers: Record<ServerName, Server> = {
      ceiling: { start: () => spawnBaseline('ceiling', {}) },
      naive: { start: () => spawnBaseline('naive', { DATABASE_URL: db.url, POOL_SIZE: '10' }), db },
      'group-commit': { start: () => spawnBaseline('group-commit', { DATABASE_URL: db.url, POOL_SIZE: '10' }), db },
      web: { start: () => spawnBenchService(serviceEnv(db.url, 'web', options.env), options.nodeFlags), db, service: true },
      all: {
        start: () => spawnBenchService(serviceEnv(allDb.url, 'all', options.env), options.nodeFlags),
        db: allDb,
        service: true,
        drains: true,
        quiet: true,
      },
      'all-notify': {
        start: async () => spawnBenchService(serviceEnv(notifyDb.url, 'all', { ...(await notifiedApp()).env, ...options.env }), options.nodeFlags),
        db: notifyDb,
        service: true,
        drains: true,
        notifies: true,
      },
      'all-traced': {
        start: async () => {
          const app = await notifiedApp();
          return spawnBenchService(serviceEnv(tracedDb.url, 'all', { ...app.env, ...app.tracingEnv, ...options.env }), options.nodeFlags);
        },
        db: tracedDb,
        service: true,
        drains: true,
        notifies: true,
      },
      split: {
        start: () => spawnSplitService((role) => serviceEnv(splitDb.url, role, options.env), options.nodeFlags),
        db: splitDb,
        service: true,
        drains: true,
      },
    };
    // Every service run gets events it has not seen; the baselines start over each time.
    const sent: Partial<Record<ServerName, number>> = { web: 0, all: 0, 'all-notify': 0, 'all-traced': 0, split: 0 };
    const runs = Object.fromEntries(SERVERS.map((name) => [name, [] as Measured[]])) as Record<ServerName, Measured[]>;
    for (let round = 0; round < size.rounds; round++) {
      for (const name of round % 2 === 0 ? chosen : [...chosen].reverse()) {
        requests.next = sent[name] ?? 0;
        runs[name].push(await run(name, servers[name], requests, size, options));
        if (name in sent) sent[name] = requests.next;
      }
    }
    const { ceiling, naive, 'group-commit': groupCommit, web, all, 'all-notify': allNotify, 'all-traced': allTraced, split } = runs;
    const cycled = Object.values(sent).some((n) => n > events.count)
      ? `; REQUESTS CYCLED: raise ${options.short ? 'SHORT' : 'FULL'}.events in bench/parts/ingest.ts`
      : '';
    // With --servers, a figure is printed only when every server it needs has run.
    const ran = (...names: ServerName[]) => names.every((name) => runs[name].length > 0);
    const when = (names: ServerName[], figures: () => Figure[]): Figure[] => (ran(...names) ? figures() : []);
    const peak = (of: readonly Measured[]) => Math.max(...of.map((m) => m.rssMb!.peakMb));
    const idle = (of: readonly Measured[]) => Math.max(...of.map((m) => m.rssMb!.startMb));
    let left = 0;
    for (const fulfilling of [allDb, notifyDb, tracedDb, splitDb]) left += (await storedCounts(fulfilling)).processing;
    const stored = await Promise.all(
      (['web', 'all', 'all-notify', 'all-traced', 'split'] as const)
        .filter((name) => ran(name))
        .map((name) => unstored(name, runs[name], servers[name].db!, cycled)),
    );
    const received = await app?.received();
    const notified = received
      ? [
          undeliveredFigure(
            'ingest',
            'all-notify, all-traced notifications not delivered',
            [await notifiedOutcome(notifyDb), await notifiedOutcome(tracedDb)],
            received,
          ),
        ]
      : [];
    return [
      {
        part: 'ingest',
        name: 'event body',
        value: bytes,
        unit: 'bytes',
        note: `the workload: ${events.type} (--event ${options.event ?? 'checkout'}), ${checkout ? 'each pays a pending order, so the servers that fulfil grant' : 'the servers that fulfil record it without acting on it: no orders'}; unique, signed, the same bodies for every server`,
      },
      { part: 'ingest', name: 'postgres commit p50, 1 client', value: commitMs, unit: 'ms', note: 'one-row INSERT, autocommit: WAL flush latency' },
      ...chosen.flatMap((name) => serverFigures(name, runs[name], servers[name])),
      ...when(['web', 'naive'], () => [
        {
          part: 'ingest',
          name: 'web CPU per event ÷ naive',
          value: ratio(cpuPerEvent(web), cpuPerEvent(naive)),
          unit: '×',
          target: { op: '≤', value: 0.8 },
          note: workload,
        },
      ]),
      ...when(['all', 'naive'], () => [
        {
          part: 'ingest',
          name: 'all CPU per fulfilled event ÷ naive',
          value: ratio(cpuPerEvent(all), cpuPerEvent(naive)),
          unit: '×',
          target: { op: '≤', value: 1.0 },
          note: workload,
        },
      ]),
      ...when(['web', 'naive'], () => [
        { part: 'ingest', name: 'web req/s ÷ naive', value: ratio(rate(web), rate(naive)), unit: '×', target: { op: '≥', value: 1.5 }, note: workload },
      ]),
      ...when(['all', 'naive'], () => [
        { part: 'ingest', name: 'all req/s ÷ naive', value: ratio(rate(all), rate(naive)), unit: '×', target: { op: '≥', value: 1.2 }, note: workload },
      ]),
      ...when(['web', 'naive'], () => [
        {
          part: 'ingest',
          name: 'web p99 ÷ naive p99',
          value: ratio(latency(web, 'p99'), latency(naive, 'p99')),
          unit: '×',
          target: { op: '≤', value: 1.25 },
          note: workload,
        },
      ]),
      ...when(['all', 'naive'], () => [
        {
          part: 'ingest',
          name: 'all p99 ÷ naive p99',
          value: ratio(latency(all, 'p99'), latency(naive, 'p99')),
          unit: '×',
          target: { op: '≤', value: 1.25 },
          note: workload,
        },
      ]),
      ...when(['split', 'naive'], () => [
        {
          part: 'ingest',
          name: 'split ÷ naive: CPU, req/s, p99',
          value: ratio(cpuPerEvent(split), cpuPerEvent(naive)),
          unit: '×',
          note: `${ratio(rate(split), rate(naive)).toFixed(2)} ×, ${ratio(latency(split, 'p99'), latency(naive, 'p99')).toFixed(2)} ×; peak RSS of the two processes ${peak(split).toFixed(0)} MB, ${idle(split).toFixed(0)} MB idle (summed)`,
        },
      ]),
      ...when(['web', 'group-commit', 'ceiling'], () => [
        {
          part: 'ingest',
          name: 'web ÷ group-commit req/s',
          value: ratio(rate(web), rate(groupCommit)),
          unit: '×',
          note: `what verifying, claiming and enqueueing cost over the batching itself; the ceiling: ${ratio(rate(web), rate(ceiling)).toFixed(2)} ×`,
        },
      ]),
      ...when(['all', 'all-notify'], () => outboxFigures(all, allNotify)),
      ...when(['all-notify', 'all-traced'], () => tracingFigures(allNotify, allTraced, received!)),
      {
        part: 'ingest',
        name: 'web, all, all-notify, all-traced, split non-2xx/errors',
        value: failures(web) + failures(all) + failures(allNotify) + failures(allTraced) + failures(split),
        unit: '',
        target: { op: '≤', value: 0 },
      },
      ...when(['all'], () => [
        {
          part: 'ingest',
          name: 'all peak RSS',
          value: peak(all),
          unit: 'MB',
          target: { op: '<', value: 150 },
          note: `sampled every 100 ms from warm-up to fulfilled, the larger of ${all.length} run(s), VmHWM ${Math.max(...all.map((m) => m.rssMb!.hwmMb)).toFixed(0)} MB${ran('web') ? `; web: ${peak(web).toFixed(0)} MB, ${idle(web).toFixed(0)} MB idle` : ''}`,
        },
        { part: 'ingest', name: 'all idle RSS', value: idle(all), unit: 'MB', target: { op: '<', value: 90 }, note: 'started, before the first request' },
        ...(size.quietSeconds > 0
          ? [
              {
                part: 'ingest',
                name: 'all RSS quiet after the load',
                value: Math.max(...all.map((m) => m.quietRssMb!)),
                unit: 'MB',
                note: `${size.quietSeconds} s after the last event was fulfilled, the larger of ${all.length} run(s)`,
              },
            ]
          : []),
      ]),
      { part: 'ingest', name: 'all, all-notify, all-traced, split events left processing', value: left, unit: '', target: { op: '≤', value: 0 } },
      ...stored,
      ...notified,
    ];
  } finally {
    await app?.stop();
    await tracedDb.drop();
    await splitDb.drop();
    await notifyDb.drop();
    await allDb.drop();
    await db.drop();
  }
}
