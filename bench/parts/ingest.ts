// Part 1, ingest (issue targets 1 and 5). Four servers get the same requests the same way:
// autocannon, 50 connections, each request a unique ~3.3 KB signed checkout.session.completed
// event; a warm-up, then the measured run. (a) ceiling: Express, no database; (b) naive: one
// INSERT per request through a pg pool of 10; (c) group-commit: the bare batched INSERT, no
// verification, claim or job (the issue's yardstick for the design); (d) the service, ROLE=web, as
// a child process, its resident memory sampled from /proc during warm-up and measurement.
// The machine's speed drifts by up to 2× within a minute (a shared host), so the full run measures
// in two rounds, the servers in one order and then in the reverse: each server's figure is over
// both rounds, and a drift that is linear in time weighs on all of them alike.
import autocannon from 'autocannon';
import { createBenchDatabase, type BenchDatabase } from '../support/database.js';
import type { BenchOptions } from '../support/options.js';
import { spawnBaseline, spawnBenchService, type BenchChild } from '../support/processes.js';
import { ratio, type Figure } from '../support/report.js';
import { BENCH_WEBHOOK_SECRET, serviceEnv } from '../support/service-env.js';
import { cpuSeconds, percentile, sampleRss } from '../support/stats.js';
import { eventBodies, signatureHeader } from '../support/webhook-events.js';

const CONNECTIONS = 50;
// Enough unique events that the service never sees a repeat in either round: it has not outrun
// the bare group-commit insert (at most ≈ 7k req/s on the fastest host seen, so ≈ 85k requests per
// round of 12 s); the baselines start over each run.
const FULL = { warmupSeconds: 2, measureSeconds: 10, events: 200_000, rounds: 2 };
const SHORT = { warmupSeconds: 0.5, measureSeconds: 2, events: 20_000, rounds: 1 };

interface Requests {
  bodies: Buffer[];
  signatures: string[];
  next: number;
}

interface Measured {
  result: autocannon.Result;
  /** 2xx answers during the warm-up: acknowledged too, so they must be stored too. */
  warmup2xx: number;
  /** Requests handed to autocannon, warm-up included. */
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
  const sentBefore = requests.next;
  const rss = withRss ? sampleRss(child.pid) : undefined;
  const warmup = await load(child.url, requests, size.warmupSeconds);
  const [serverCpu, generatorCpu, started] = [cpuSeconds(child.pid), process.cpuUsage(), performance.now()];
  const result = await load(child.url, requests, size.measureSeconds);
  const seconds = (performance.now() - started) / 1000;
  const generator = process.cpuUsage(generatorCpu);
  return {
    result,
    warmup2xx: warmup['2xx'],
    sent: requests.next - sentBefore,
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

const sum = (runs: readonly Measured[], of: (m: Measured) => number) => runs.reduce((total, m) => total + of(m), 0);
const seconds = (runs: readonly Measured[]) => sum(runs, (m) => m.result.duration);
const rate = (runs: readonly Measured[]) => sum(runs, (m) => m.result['2xx']) / seconds(runs);
const failures = (runs: readonly Measured[]) => sum(runs, (m) => m.result.non2xx + m.result.errors + m.result.timeouts);
/** Percentiles cannot be merged from autocannon's summaries: the mean over the rounds. */
const latency = (runs: readonly Measured[], p: 'p50' | 'p99') => sum(runs, (m) => m.result.latency[p]) / runs.length;

function serverFigures(name: string, runs: readonly Measured[]): Figure[] {
  const ok = sum(runs, (m) => m.result['2xx']);
  const serverCores = sum(runs, (m) => m.serverCores * m.result.duration) / seconds(runs);
  const generatorCores = sum(runs, (m) => m.generatorCores * m.result.duration) / seconds(runs);
  // CPU per request holds up better than req/s when other work shares the cores.
  const cpuPerRequestMs = (serverCores * seconds(runs) * 1000) / ok;
  const perRound = runs.length > 1 ? ` (rounds: ${runs.map((m) => (m.result['2xx'] / m.result.duration).toFixed(0)).join(', ')})` : '';
  const note = `${ok} × 2xx in ${seconds(runs).toFixed(1)} s${perRound}, ${failures(runs)} non-2xx/errors; CPU: server ${serverCores.toFixed(2)} cores (${cpuPerRequestMs.toFixed(2)} ms per request), load generator ${generatorCores.toFixed(2)}`;
  return [
    { part: 'ingest', name: `${name} req/s`, value: rate(runs), unit: 'req/s', note },
    { part: 'ingest', name: `${name} p50`, value: latency(runs, 'p50'), unit: 'ms' },
    { part: 'ingest', name: `${name} p99`, value: latency(runs, 'p99'), unit: 'ms', ...(name === 'service' && { target: { op: '≤', value: 30 } }) },
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
    'select (select count(*) from stripe_events)::int as events, (select count(*) from graphile_worker.jobs)::int as jobs',
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
    let serviceSent = 0;
    const servers = {
      ceiling: () => spawnBaseline('ceiling', {}),
      naive: () => spawnBaseline('naive', { DATABASE_URL: db.url, POOL_SIZE: '10' }),
      'group-commit': () => spawnBaseline('group-commit', { DATABASE_URL: db.url, POOL_SIZE: '10' }),
      service: () => spawnBenchService(serviceEnv(db.url, 'web', options.env)),
    };
    const runs: Record<keyof typeof servers, Measured[]> = { ceiling: [], naive: [], 'group-commit': [], service: [] };
    const order = Object.keys(servers) as Array<keyof typeof servers>;
    for (let round = 0; round < size.rounds; round++) {
      // Every service run gets events it has not seen; the baselines start over each time.
      for (const name of round % 2 === 0 ? order : [...order].reverse()) {
        requests.next = name === 'service' ? serviceSent : 0;
        runs[name].push(await run(name, servers[name], requests, size, options));
        if (name === 'service') serviceSent = requests.next;
      }
    }
    const { ceiling, naive, 'group-commit': groupCommit, service } = runs;
    const stored = await storedCounts(db);
    const acknowledged = sum(service, (m) => m.warmup2xx + m.result['2xx']);
    const cycled = serviceSent > events.count;
    const rss = service.map((m) => m.rssMb!);
    return [
      { part: 'ingest', name: 'postgres commit p50, 1 client', value: commitMs, unit: 'ms', note: 'one-row INSERT, autocommit: WAL flush latency' },
      ...serverFigures('ceiling', ceiling),
      ...serverFigures('naive', naive),
      ...serverFigures('group-commit', groupCommit),
      ...serverFigures('service', service),
      { part: 'ingest', name: 'service non-2xx/errors', value: failures(service), unit: '', target: { op: '≤', value: 0 } },
      { part: 'ingest', name: 'service/ceiling', value: ratio(rate(service), rate(ceiling)), unit: '×', target: { op: '≥', value: 0.5 } },
      { part: 'ingest', name: 'service/naive', value: ratio(rate(service), rate(naive)), unit: '×', target: { op: '≥', value: 1.2 } },
      {
        part: 'ingest',
        name: 'service/group-commit',
        value: ratio(rate(service), rate(groupCommit)),
        unit: '×',
        note: `what verifying, claiming and enqueueing cost over the batching itself; group-commit alone: ${ratio(rate(groupCommit), rate(ceiling)).toFixed(2)} × the ceiling, ${ratio(rate(groupCommit), rate(naive)).toFixed(2)} × naive`,
      },
      {
        part: 'ingest',
        name: 'service peak RSS',
        value: Math.max(...rss.map((r) => r.peakMb)),
        unit: 'MB',
        target: { op: '<', value: 200 },
        note: `sampled every 100 ms from warm-up to end, the larger of ${rss.length} run(s); ${Math.max(...rss.map((r) => r.startMb)).toFixed(0)} MB idle before it, VmHWM ${Math.max(...rss.map((r) => r.hwmMb)).toFixed(0)} MB`,
      },
      {
        // Invariant 1 by count: every 2xx (warm-up included) has its row; requests still in
        // flight when autocannon stopped may add rows without a counted 2xx.
        part: 'ingest',
        name: 'service 2xx without a row',
        value: Math.max(0, acknowledged - stored.events),
        unit: '',
        target: { op: '≤', value: 0 },
        note: `${acknowledged} acknowledged, ${stored.events} events and ${stored.jobs} jobs stored${cycled ? `; REQUESTS CYCLED: raise ${options.short ? 'SHORT' : 'FULL'}.events in bench/parts/ingest.ts` : ''}`,
      },
    ];
  } finally {
    await db.drop();
  }
}
