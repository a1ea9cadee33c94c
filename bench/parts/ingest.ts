// Part 1, ingest (issue targets 1 and 5). Three servers get the same requests the same way:
// autocannon, 50 connections, each request a unique ~3.3 KB signed checkout.session.completed
// event; a warm-up, then the measured run. (a) ceiling: Express, no database; (b) naive: one
// INSERT per request through a pg pool of 10; (c) the service, ROLE=web, as a child process,
// its resident memory sampled from /proc during warm-up and measurement.
import autocannon from 'autocannon';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import { spawnBaseline, spawnBenchService, type BenchChild } from '../support/processes.js';
import { ratio, type Figure } from '../support/report.js';
import { BENCH_WEBHOOK_SECRET, serviceEnv } from '../support/service-env.js';
import { cpuSeconds, percentile, sampleRss } from '../support/stats.js';
import { eventBodies, signatureHeader } from '../support/webhook-events.js';

const CONNECTIONS = 50;
// Enough unique events that the service never sees a repeat: it cannot outrun the ceiling
// (≈ 8.6k req/s here, so ≈ 100k requests in 12 s); the ceiling and naive servers may cycle.
const FULL = { warmupSeconds: 2, measureSeconds: 10, events: 80_000 };
const SHORT = { warmupSeconds: 0.5, measureSeconds: 2, events: 5_000 };

interface Requests {
  bodies: Buffer[];
  signatures: string[];
  next: number;
}

interface Measured {
  result: autocannon.Result;
  /** 2xx answers during the warm-up: acknowledged too, so they must be stored too. */
  warmup2xx: number;
  /** Requests handed to autocannon, warm-up included (only the service must not cycle). */
  sent: number;
  rssMb?: { startMb: number; peakMb: number; hwmMb: number };
  /** CPU used during the measured run, in cores: the server process and this (load generator) process. */
  serverCores: number;
  generatorCores: number;
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

async function measure(child: BenchChild, requests: Requests, size: typeof FULL, withRss: boolean): Promise<Measured> {
  // Signed now: the service refuses signatures older than 300 s, and each server runs for seconds.
  const timestamp = Math.floor(Date.now() / 1000);
  requests.signatures = requests.bodies.map((body) => signatureHeader(body, BENCH_WEBHOOK_SECRET, timestamp));
  requests.next = 0;
  const rss = withRss ? sampleRss(child.pid) : undefined;
  const warmup = await load(child.url, requests, size.warmupSeconds);
  const [serverCpu, generatorCpu, started] = [cpuSeconds(child.pid), process.cpuUsage(), performance.now()];
  const result = await load(child.url, requests, size.measureSeconds);
  const seconds = (performance.now() - started) / 1000;
  const generator = process.cpuUsage(generatorCpu);
  return {
    result,
    warmup2xx: warmup['2xx'],
    sent: requests.next,
    serverCores: (cpuSeconds(child.pid) - serverCpu) / seconds,
    generatorCores: (generator.user + generator.system) / 1e6 / seconds,
    ...(rss && { rssMb: rss.stop() }),
  };
}

async function run(name: string, start: () => Promise<BenchChild>, requests: Requests, size: typeof FULL, options: BenchOptions): Promise<Measured> {
  options.log(`ingest: ${name}: ${size.warmupSeconds} s warm-up + ${size.measureSeconds} s at ${CONNECTIONS} connections`);
  const child = await start();
  try {
    return await measure(child, requests, size, name === 'service');
  } finally {
    await child.stop();
  }
}

const rate = (m: Measured) => m.result['2xx'] / m.result.duration;
const failures = (m: Measured) => m.result.non2xx + m.result.errors + m.result.timeouts;

function serverFigures(name: string, m: Measured): Figure[] {
  // CPU per request holds up better than req/s when other work shares the cores.
  const cpuPerRequestMs = (m.serverCores * m.result.duration * 1000) / m.result['2xx'];
  const note = `${m.result['2xx']} × 2xx in ${m.result.duration.toFixed(1)} s, ${failures(m)} non-2xx/errors; CPU: server ${m.serverCores.toFixed(2)} cores (${cpuPerRequestMs.toFixed(2)} ms per request), load generator ${m.generatorCores.toFixed(2)}`;
  return [
    { part: 'ingest', name: `${name} req/s`, value: rate(m), unit: 'req/s', note },
    { part: 'ingest', name: `${name} p50`, value: m.result.latency.p50, unit: 'ms' },
    { part: 'ingest', name: `${name} p99`, value: m.result.latency.p99, unit: 'ms', ...(name === 'service' && { target: { op: '≤', value: 30 } }) },
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

async function storedCounts(db: BenchDatabase): Promise<{ events: number; jobs: number }> {
  const { rows } = await db.pool.query<{ events: number; jobs: number }>(
    'select (select count(*) from stripe_events)::int as events, (select count(*) from graphile_worker._private_jobs)::int as jobs',
  );
  return rows[0]!;
}

export async function benchIngest(options: BenchOptions): Promise<Figure[]> {
  const size = options.short ? SHORT : FULL;
  const events = eventBodies(size.events);
  const requests: Requests = { bodies: Array.from({ length: events.count }, (_, i) => Buffer.from(events.body(i))), signatures: [], next: 0 };
  const db = await createBenchDatabase(options.serverUrl, { maxConnections: 2 });
  try {
    const commitMs = await commitLatencyMs(db, options.short ? 50 : 300);
    const ceiling = await run('ceiling', () => spawnBaseline('ceiling', {}), requests, size, options);
    const naive = await run('naive', () => spawnBaseline('naive', { DATABASE_URL: db.url, POOL_SIZE: '10' }), requests, size, options);
    const service = await run('service', () => spawnBenchService(serviceEnv(db.url, 'web', options.env)), requests, size, options);
    const stored = await storedCounts(db);
    const acknowledged = service.warmup2xx + service.result['2xx'];
    const cycled = service.sent > events.count;
    return [
      { part: 'ingest', name: 'postgres commit p50, 1 client', value: commitMs, unit: 'ms', note: 'one-row INSERT, autocommit: WAL flush latency' },
      ...serverFigures('ceiling', ceiling),
      ...serverFigures('naive', naive),
      ...serverFigures('service', service),
      { part: 'ingest', name: 'service non-2xx/errors', value: failures(service), unit: '', target: { op: '≤', value: 0 } },
      { part: 'ingest', name: 'service/ceiling', value: ratio(rate(service), rate(ceiling)), unit: '×', target: { op: '≥', value: 0.5 } },
      { part: 'ingest', name: 'service/naive', value: ratio(rate(service), rate(naive)), unit: '×', target: { op: '≥', value: 1.2 } },
      {
        part: 'ingest',
        name: 'service peak RSS',
        value: service.rssMb?.peakMb ?? Number.NaN,
        unit: 'MB',
        target: { op: '<', value: 200 },
        note: `sampled every 100 ms from warm-up to end; ${service.rssMb?.startMb.toFixed(0) ?? '?'} MB idle before it, VmHWM ${service.rssMb?.hwmMb.toFixed(0) ?? '?'} MB`,
      },
      {
        // Invariant 1 by count: every 2xx (warm-up included) has its row; requests still in
        // flight when autocannon stopped may add rows without a counted 2xx.
        part: 'ingest',
        name: 'service 2xx without a row',
        value: Math.max(0, acknowledged - stored.events),
        unit: '',
        target: { op: '≤', value: 0 },
        note: `${acknowledged} acknowledged, ${stored.events} events and ${stored.jobs} jobs stored${cycled ? '; REQUESTS CYCLED: raise FULL.events' : ''}`,
      },
    ];
  } finally {
    await db.drop();
  }
}
