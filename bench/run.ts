// `npm run bench -- [statements|ingest|drain|latency|sweep|abuse|replication|all]… [--short] [--json] [--concurrency N] [--env KEY=VALUE]… [--node-flag FLAG]… [--db-setting NAME=VALUE]… [--servers LIST] [--event checkout|payment-intent] [--rounds N] [--warmup S]`
// Runs the benchmark parts, each on its own throwaway database, baselines and the service in the
// same run, and prints figures, ratios to the baselines and the targets beside them.
// Method and current figures: docs/benchmarks.md.
import { parseArgs } from 'node:util';
import { benchAbuse } from './parts/abuse.js';
import { benchDrain } from './parts/drain.js';
import { benchIngest, ingestSize, MAX_INGEST_EVENTS, SERVERS } from './parts/ingest.js';
import { benchLatency } from './parts/latency.js';
import { benchReplication } from './parts/replication.js';
import { benchStatements } from './parts/statements.js';
import { benchSweep } from './parts/sweep.js';
import { cleanupAll, installSignalCleanup } from './support/cleanup.js';
import { buildService, imageNodeOptions } from './support/compiled-service.js';
import { DEFAULT_SERVER_URL, dropLeftoverBenchDatabases } from './support/database.js';
import { machineFacts } from './support/machine.js';
import type { BenchOptions } from './support/options.js';
import { formatTable, type Figure } from './support/report.js';
import { BENCH_EVENTS, type BenchEvent } from './support/webhook-events.js';

const PARTS = {
  statements: benchStatements,
  ingest: benchIngest,
  drain: benchDrain,
  latency: benchLatency,
  sweep: benchSweep,
  abuse: benchAbuse,
  replication: benchReplication,
} as const;
type PartName = keyof typeof PARTS;
/** `all`: replication needs Debian's patroni, etcd-server and haproxy, so it runs only when named. */
const ALL: readonly PartName[] = ['statements', 'ingest', 'drain', 'latency', 'sweep', 'abuse'];

const USAGE = `usage: npm run bench -- [statements|ingest|drain|latency|sweep|abuse|replication|all]… [options]

  statements
            statements sent to Postgres per claimed and per fulfilled event, alone and in a batch of
            25 (a count, not a time): fails when one exceeds bench/statement-budget.json
  ingest    webhook POSTs at 50 connections: Express ceiling, naive INSERT, bare group-commit INSERT,
            the service with ROLE=web and with the defaults (ROLE=all, fulfilling all it accepts),
            ROLE=all notifying a local receiver (all-notify) and doing so with tracing on, exporting its
            spans to that receiver (all-traced), each request a unique signed event (--event); req/s, p99 and CPU per event (the process and its Postgres backends) against naive
  drain     20k checkout.session.completed events fulfilled by ROLE=worker vs bare graphile-worker,
            and by ROLE=worker notifying a local receiver, until fulfilled and until delivered
  latency   webhook 2xx → order paid at 50 events/s (ROLE=all)
  sweep     sweep with nothing to do, and 10k stale rows reclaimed, at 100k and 1M finished events
  abuse     a Stripe that never answers, 200 big unsigned bodies, slow clients: with the default limits
  replication
            ingest (naive and ROLE=web) against a Patroni cluster through HAProxy: with a synchronous
            standby, an asynchronous one and none; needs patroni, etcd-server and haproxy (Debian)
  all       every part but replication, then one summary table (the default); several parts, e.g.
            ingest drain, run in turn

options:
  --short              CI smoke mode: seconds per part, tiny sizes (checks the scripts, not the numbers)
  --json               machine-readable output on stdout
  --concurrency N      WORKER_CONCURRENCY for drain, service and baseline alike (default 10)
  --env KEY=VALUE      extra environment for every service process (repeatable)
  --node-flag FLAG     a flag for node in every service process, for those NODE_OPTIONS refuses, e.g. --node-flag=--optimize-for-size (repeatable)
  --db-setting NAME=VALUE
                       a Postgres setting for every database the bench creates (ALTER DATABASE … SET), e.g.
                       --db-setting session_preload_libraries=auto_explain --db-setting auto_explain.log_min_duration=0
                       logs the plan of every statement to the server's log (repeatable)
  --servers LIST       ingest only: run these servers, comma-separated (${SERVERS.join(', ')}; all-notify
                       and all-traced only when named); a ratio is printed when both of its servers ran, e.g. --servers naive,all
  --event checkout|payment-intent
                       ingest only: what every request carries (default checkout): checkout is a 3.3 KB
                       checkout.session.completed paying a pending order (a grant); payment-intent a 3 KB
                       payment_intent.succeeded, stored and recorded without acting on it (a reviewer's workload)
  --rounds N           ingest and drain: rounds of every server, in alternating order (default: ingest 2, drain 1; --short 1)
  --warmup S           ingest only: seconds of load before each measured run (default 2; --short 0.5)

Postgres: DATABASE_URL (the server; each part creates and drops stripe_inbox_bench_<random>,
and a bench drops those a killed bench on this machine left), default ${DEFAULT_SERVER_URL}.`;

class UsageError extends Error {}

function parseOptions(argv: string[]): { parts: PartName[]; json: boolean; options: Omit<BenchOptions, 'log'> } | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      short: { type: 'boolean' },
      json: { type: 'boolean' },
      concurrency: { type: 'string' },
      env: { type: 'string', multiple: true },
      'node-flag': { type: 'string', multiple: true },
      'db-setting': { type: 'string', multiple: true },
      servers: { type: 'string' },
      event: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const named = positionals.length > 0 ? positionals : ['all'];
  const wrongPart = named.find((part) => part !== 'all' && !(part in PARTS));
  if (wrongPart !== undefined) throw new UsageError(`unknown part '${wrongPart}'`);
  if (named.length > 1 && named.includes('all')) throw new UsageError(`'all' runs every part: name it alone, got: ${named.join(' ')}`);
  const parts = named[0] === 'all' ? [...ALL] : [...new Set(named as PartName[])];
  const runs = (part: PartName) => named.includes(part);
  const concurrency = Number(values.concurrency ?? '10');
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 100) throw new UsageError('--concurrency must be a whole number from 1 to 100');
  const nodeFlags = values['node-flag'] ?? [];
  const wrong = nodeFlags.find((flag) => !flag.startsWith('--'));
  if (wrong !== undefined) throw new UsageError(`--node-flag wants a flag starting with --, got '${wrong}' (write --node-flag=--optimize-for-size)`);
  const env: Record<string, string> = {};
  for (const pair of values.env ?? []) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/s.exec(pair);
    if (!match) throw new UsageError(`--env wants KEY=VALUE, got '${pair}'`);
    env[match[1]!] = match[2]!;
  }
  const dbSettings: Record<string, string> = {};
  for (const pair of values['db-setting'] ?? []) {
    const match = /^([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?)=(.*)$/is.exec(pair);
    if (!match) throw new UsageError(`--db-setting wants NAME=VALUE with a Postgres setting's name, got '${pair}'`);
    dbSettings[match[1]!] = match[2]!;
  }
  const servers = values.servers?.split(',').map((name) => name.trim());
  if (servers && !runs('ingest')) throw new UsageError('--servers is for the ingest part: npm run bench -- ingest --servers naive,all');
  const unknown = servers?.find((name) => !(SERVERS as readonly string[]).includes(name));
  if (unknown !== undefined) throw new UsageError(`--servers: unknown server '${unknown}' (choose from ${SERVERS.join(', ')})`);
  if (values.event !== undefined && !runs('ingest')) throw new UsageError('--event is for the ingest part: npm run bench -- ingest --event payment-intent');
  if (values.event !== undefined && !Object.hasOwn(BENCH_EVENTS, values.event))
    throw new UsageError(`--event: unknown event '${values.event}' (choose from ${Object.keys(BENCH_EVENTS).join(', ')})`);
  const event = values.event as BenchEvent | undefined;
  const rounds = values.rounds === undefined ? undefined : Number(values.rounds);
  if (rounds !== undefined && !runs('ingest') && !runs('drain'))
    throw new UsageError('--rounds is for the ingest and drain parts: npm run bench -- ingest drain --rounds 4');
  if (rounds !== undefined && (!Number.isInteger(rounds) || rounds < 1 || rounds > 10)) throw new UsageError('--rounds must be a whole number from 1 to 10');
  const warmupSeconds = values.warmup === undefined ? undefined : Number(values.warmup);
  if (warmupSeconds !== undefined && !runs('ingest')) throw new UsageError('--warmup is for the ingest part: npm run bench -- ingest --warmup 10');
  if (warmupSeconds !== undefined && !(warmupSeconds >= 0.5 && warmupSeconds <= 120))
    throw new UsageError('--warmup must be a number of seconds from 0.5 to 120');
  const size = ingestSize({ short: values.short === true, ...(rounds && { rounds }), ...(warmupSeconds && { warmupSeconds }) });
  if (size.events > MAX_INGEST_EVENTS) {
    throw new UsageError(
      `${size.rounds} rounds with a ${size.warmupSeconds} s warm-up need ${size.events.toLocaleString('en')} unique events, more than the ${MAX_INGEST_EVENTS.toLocaleString('en')} the bench holds in memory: fewer --rounds or a shorter --warmup`,
    );
  }
  return {
    parts,
    json: values.json === true,
    options: {
      serverUrl: process.env.DATABASE_URL ?? DEFAULT_SERVER_URL,
      short: values.short === true,
      concurrency,
      nodeFlags,
      env,
      dbSettings,
      ...(servers && { servers }),
      ...(event && { event }),
      ...(rounds && { rounds }),
      ...(warmupSeconds && { warmupSeconds }),
    },
  };
}

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { parts, json } = parsed;
  const started = Date.now();
  const options: BenchOptions = { ...parsed.options, log: (message) => process.stderr.write(`bench: ${message}\n`) };
  installSignalCleanup();
  const out = (text: string) => !json && process.stdout.write(`${text}\n`);

  const leftover = await dropLeftoverBenchDatabases(options.serverUrl);
  if (leftover.length > 0) options.log(`dropped ${leftover.length} database(s) a killed bench left behind: ${leftover.join(', ')}`);
  const machine = await machineFacts(options.serverUrl);
  out(
    Object.entries({ ...machine, mode: options.short ? 'short (CI smoke: numbers not meaningful)' : 'full' })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
  );
  out(`service NODE_OPTIONS (the image's): ${imageNodeOptions() || 'none'}`);
  if (options.nodeFlags.length > 0) out(`service node flags: ${options.nodeFlags.join(' ')}`);
  if (Object.keys(options.env).length > 0)
    out(
      `service env: ${Object.entries(options.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  if (parts.includes('ingest'))
    out(`ingest workload: every request a unique signed ${BENCH_EVENTS[options.event ?? 'checkout']} (--event ${options.event ?? 'checkout'})`);
  if (Object.keys(options.dbSettings).length > 0)
    out(
      `bench databases: ${Object.entries(options.dbSettings)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );

  if (parts.some((part) => part !== 'sweep' && part !== 'statements')) {
    options.log('building the service bundle (npm run build): the parts run it as the image does');
    buildService();
  }
  const figures: Figure[] = [];
  const failures: Array<{ part: string; error: string }> = [];
  for (const part of parts) {
    const partStarted = Date.now();
    try {
      const result = await PARTS[part](options);
      figures.push(...result);
      out(`\n${part} (${((Date.now() - partStarted) / 1000).toFixed(0)} s)\n${formatTable(result)}`);
    } catch (error) {
      failures.push({ part, error: describe(error) });
      process.stderr.write(`bench: ${part} failed: ${describe(error)}\n`);
    } finally {
      await cleanupAll();
    }
  }
  const seconds = (Date.now() - started) / 1000;
  if (json)
    process.stdout.write(
      `${JSON.stringify({ machine, short: options.short, ...(parts.includes('ingest') && { ingestEvent: BENCH_EVENTS[options.event ?? 'checkout'] }), nodeOptions: imageNodeOptions(), nodeFlags: options.nodeFlags, env: options.env, dbSettings: options.dbSettings, seconds, figures, failures }, null, 2)}\n`,
    );
  else if (parts.length > 1) out(`\nsummary (${seconds.toFixed(0)} s)\n${formatTable(figures)}`);
  return failures.length > 0 ? 1 : 0;
}

function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error; e instanceof Error; e = e.cause) parts.push(e.message);
  return parts.join(': ') || String(error);
}

main().then(
  (code) => (process.exitCode = code),
  async (error: unknown) => {
    process.stderr.write(`bench failed: ${describe(error)}\n`);
    await cleanupAll();
    process.exitCode = 1;
  },
);
