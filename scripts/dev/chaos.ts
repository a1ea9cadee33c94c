// npm run chaos: exactly-once under fire, on real processes. Creates a throwaway database, starts
// N service processes, sends a steady stream of signed checkout.session.completed deliveries
// (repeats and second Event objects included, failures retried as Stripe retries), SIGKILLs and
// SIGTERMs processes at random and restarts them, sweeps as ops would, waits for the inbox to
// drain, and checks: every acknowledged payment granted once, every SIGTERM answered by exit 0
// (docs/design.md, invariants 1, 3-7 and 10). Only 127.0.0.1 traffic; only its own database
// is touched.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { runScript, UsageError } from '../../src/cli/script.js';
import { wholeNumberOption } from '../../src/cli/whole-number.js';
import { ServiceFleet } from './service-fleet.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import type { Database } from '../../src/db/schema.js';
import type { OrderRow } from '../../src/modules/credits/tables.js';
import { waker } from '../../src/events/event-waits.js';
import { attachCheckoutSession, createOrder } from '../../src/modules/credits/orders.js';
import { checkoutSession, sampleEvent, signDelivery, type SampleEvent } from '../../src/stripe/sample-events.js';
import { sweepStaleEvents } from '../../src/maintenance/sweep.js';
import { serviceMigrations } from '../../src/modules/index.js';

const DEFAULT_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';
const IN_FLIGHT = 32; // concurrent deliveries
const REPEAT_SHARE = 0.2; // the same event delivered again (a Stripe retry, or two at once)
const SECOND_EVENT_SHARE = 0.1; // a second Event object for the same session (docs/design.md, invariant 4)
const ORDERS_PER_ACCOUNT = 10; // so that grants contend for their account's balance row
// Stripe retries for three days; 8 attempts, backoff from 250 ms doubling up to 4 s, bound this run.
const DELIVERY_ATTEMPTS = 8;
const DELIVERY_TIMEOUT_MS = 10_000;
const KILL_EVERY_MS = { min: 1_500, max: 4_000 };
const SWEEP_EVERY_MS = 2_000;
const STALE_AFTER_SECONDS = 2;
const SEND_GRACE_MS = 120_000; // past --duration, for a backlog and the last retries
const DRAIN_TIMEOUT_MS = 120_000;

const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(Math.random() * items.length)];
const between = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

type Delivery = { readonly orderId: string; readonly event: SampleEvent; attempt: number; retryAt: number };

/** One delivery per payment, ~20 % delivered twice, ~10 % with a second Event object; shuffled. */
function planDeliveries(orders: readonly OrderRow[]): Delivery[] {
  const plan: Delivery[] = [];
  const add = (order: OrderRow, event: SampleEvent) => plan.push({ orderId: order.order_id, event, attempt: 1, retryAt: 0 });
  for (const order of orders) {
    const session = checkoutSession({ orderId: order.order_id, sessionId: order.checkout_session_id!, amount: order.amount, currency: order.currency });
    const event = sampleEvent('checkout.session.completed', session);
    add(order, event);
    if (Math.random() < REPEAT_SHARE) add(order, event);
    if (Math.random() < SECOND_EVENT_SHARE) add(order, sampleEvent('checkout.session.completed', session));
  }
  for (let i = plan.length - 1; i > 0; i--) {
    const j = between(0, i + 1);
    [plan[i], plan[j]] = [plan[j]!, plan[i]!];
  }
  return plan;
}

function newSendStats() {
  return {
    deliveries: 0,
    retried: 0,
    /** Answers other than 200, by HTTP status or connection error code. */
    failures: {} as Record<string, number>,
    /** Orders with a delivery answered 200: each must end granted. */
    acknowledged: new Set<string>(),
    /** Every planned delivery has been tried once; retries may follow until `done`. */
    firstPassDone: false,
    done: false,
  };
}

/** Sends the plan at a steady rate over durationMs, IN_FLIGHT at most, retrying what is not a 200. */
async function sendAll(plan: Delivery[], fleet: ServiceFleet, secret: string, durationMs: number, signal: AbortSignal, stats: ReturnType<typeof newSendStats>) {
  const retries: Delivery[] = [];
  const deliver = async (d: Delivery) => {
    stats.deliveries++;
    if (d.attempt > 1) stats.retried++;
    const target = pick(fleet.live());
    let outcome = 'no live process';
    if (target) {
      // Each attempt is signed anew, like each Stripe delivery: new timestamp, same event id.
      const { body, headers } = signDelivery(d.event, secret);
      try {
        const response = await fetch(`${target.child.url}/webhooks/stripe`, {
          method: 'POST',
          body,
          headers,
          signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
        });
        await response.arrayBuffer();
        outcome = String(response.status);
      } catch (error) {
        outcome = ((error as Error).cause as { code?: string } | undefined)?.code ?? (error as Error).name;
      }
    }
    if (outcome === '200') return void stats.acknowledged.add(d.orderId);
    stats.failures[outcome] = (stats.failures[outcome] ?? 0) + 1;
    if (d.attempt < DELIVERY_ATTEMPTS) retries.push({ ...d, attempt: d.attempt + 1, retryAt: Date.now() + Math.min(4_000, 250 * 2 ** (d.attempt - 1)) });
  };

  const started = Date.now();
  let next = 0;
  let inFlight = 0;
  while ((next < plan.length || retries.length > 0 || inFlight > 0) && Date.now() < started + durationMs + SEND_GRACE_MS && !signal.aborted) {
    const now = Date.now();
    const due = Math.min(plan.length, Math.ceil((plan.length * (now - started)) / durationMs));
    while (inFlight < IN_FLIGHT) {
      // Retries that are due first, then the plan as far as the steady rate allows.
      const r = retries.findIndex((d) => d.retryAt <= now);
      const delivery = r >= 0 ? retries.splice(r, 1)[0] : next < due ? plan[next++] : undefined;
      if (!delivery) break;
      inFlight++;
      void deliver(delivery).finally(() => inFlight--);
    }
    stats.firstPassDone = next === plan.length;
    await sleep(5);
  }
  stats.firstPassDone = stats.done = true;
}

/** What the database says happened: grants, double grants, balances, acknowledged but not granted. */
async function outcome(db: Kysely<Database>, acknowledgedOrders: readonly string[]) {
  const { rows } = await sql<{ granted: number; double_grants: number; balance_mismatches: number; lost: number }>`
    select (select count(distinct order_id)::int from credit_grants) as granted,
      -- Impossible by the primary key; the balances below would show a grant that went around it.
      (select count(*)::int from (select 1 from credit_grants group by order_id having count(*) > 1) d) as double_grants,
      (select count(*)::int from (
         select account_id, sum(o.credits) as expected from credit_grants g join orders o using (order_id, account_id) group by account_id) g
       full join account_credits a using (account_id)
       where coalesce(a.granted, 0) <> coalesce(g.expected, 0)) as balance_mismatches,
      (select count(*)::int from unnest(${acknowledgedOrders}::text[]) as acked(order_id)
       where not exists (select 1 from credit_grants g where g.order_id = acked.order_id)) as lost`.execute(db);
  const statuses = await sql<{ status: string; n: number }>`select status, count(*)::int as n from stripe_events group by status order by status`.execute(db);
  return { ...rows[0]!, event_statuses: Object.fromEntries(statuses.rows.map((r) => [r.status, r.n])) };
}

const countProcessing = async (db: Kysely<Database>) =>
  (await sql<{ n: number }>`select count(*)::int as n from stripe_events where status = 'processing'`.execute(db)).rows[0]!.n;

/** CREATE or DROP DATABASE, from the server's own database. */
async function onServer(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query(statement);
  } catch (error) {
    throw new Error(`${statement} on ${new URL(serverUrl).host}`, { cause: error });
  } finally {
    await client.end().catch(() => {});
  }
}

/** The service processes of one run: test mode, no Stripe, a short stale threshold so the sweep acts within the run. */
function chaosFleet(databaseUrl: string, secret: string, maxAttempts: number, progress: (line: string) => void): ServiceFleet {
  return new ServiceFleet({
    env: {
      NODE_ENV: 'test',
      ROLE: 'all',
      DATABASE_URL: databaseUrl,
      STRIPE_WEBHOOK_SECRET: secret,
      PORT: '0',
      // spawnService reads the URL from the start line, logged at info.
      LOG_LEVEL: 'info',
      // Nothing here calls Stripe; a closed port makes any call fail fast.
      STRIPE_SECRET_KEY: 'sk_test_offline_0123456789abcdef',
      STRIPE_API_BASE: 'http://127.0.0.1:9',
      API_TOKEN: randomBytes(24).toString('hex'),
      ADMIN_TOKEN: randomBytes(24).toString('hex'),
      STALE_AFTER_SECONDS: String(STALE_AFTER_SECONDS),
      SWEEP_CRON: '* * * * *',
      SHUTDOWN_TIMEOUT_SECONDS: '5',
      MAX_ATTEMPTS: String(maxAttempts),
    },
    log: progress,
    // Warnings and errors only: at info the service logs a line per delivery and per job.
    keepLog: (entry) => Number(entry.level) >= 40,
  });
}

/**
 * Ctrl-C (or SIGTERM): stop every loop, SIGKILL the children, drop the database. One Ctrl-C
 * arrives two or three times (from the terminal, relayed by npm and tsx): only a second one a
 * second later means "exit now". Returns the signal the loops watch and how to stop listening.
 */
function onInterrupt(fleet: ServiceFleet, progress: (line: string) => void): { signal: AbortSignal; release: () => void } {
  const abort = new AbortController();
  let interruptedAt = 0;
  const onSignal = () => {
    if (interruptedAt && Date.now() - interruptedAt > 1_000) process.exit(130);
    if (interruptedAt) return;
    interruptedAt = Date.now();
    progress('interrupted: killing the processes and dropping the database');
    abort.abort();
    void fleet.killAll();
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  return { signal: abort.signal, release: () => process.off('SIGINT', onSignal).off('SIGTERM', onSignal) };
}

/** One order per event, ORDERS_PER_ACCOUNT to an account, four at a time (one per pool connection). */
async function createOrders(db: Kysely<Database>, events: number, signal: AbortSignal): Promise<OrderRow[]> {
  const orders: OrderRow[] = [];
  for (let i = 0; i < events && !signal.aborted; i += 4) {
    const batch = Array.from({ length: Math.min(4, events - i) }, (_, j) => `acct_chaos_${(i + j) % Math.ceil(events / ORDERS_PER_ACCOUNT)}`);
    for (const order of await Promise.all(batch.map((accountId) => createOrder(db, { packageId: 'starter', accountId, email: null })))) {
      if (!order) throw new Error("the 'starter' package is missing (sql/0001 seeds it)");
      // As POST /api/checkout stores the session Stripe opened: only that session pays the order.
      const checkoutSessionId = `cs_chaos_${order.order_id}`;
      await attachCheckoutSession(db, order.order_id, checkoutSessionId, waker({ maxAttempts: 10 }));
      orders.push({ ...order, checkout_session_id: checkoutSessionId });
    }
  }
  return orders;
}

/** Sends the plan while killing a process every few seconds, and sweeps until the last retry. */
async function sendKillingAndSweeping(
  plan: Delivery[],
  fleet: ServiceFleet,
  secret: string,
  durationMs: number,
  signal: AbortSignal,
  sweep: () => Promise<void>,
) {
  const sent = newSendStats();
  // Kills while the first pass is sent, sweeps until the last retry: the sender's deadline bounds all three.
  await Promise.all([
    sendAll(plan, fleet, secret, durationMs, signal, sent),
    (async () => {
      while (!sent.firstPassDone) {
        await sleep(between(KILL_EVERY_MS.min, KILL_EVERY_MS.max));
        if (!sent.firstPassDone) fleet.killOne();
      }
    })(),
    (async () => {
      while (!sent.done) await sleep(SWEEP_EVERY_MS).then(sweep);
    })(),
  ]);
  return sent;
}

/** Sweeps until no event is processing, or DRAIN_TIMEOUT_MS after sending ended; returns what is left. */
async function drain(
  db: Kysely<Database>,
  sendingEnded: number,
  signal: AbortSignal,
  sweep: () => Promise<void>,
  progress: (line: string) => void,
): Promise<number> {
  let stuck = await countProcessing(db);
  for (let i = 1; stuck > 0 && Date.now() < sendingEnded + DRAIN_TIMEOUT_MS && !signal.aborted; i++) {
    if (i % 20 === 0) progress(`${stuck} events processing`);
    await sweep();
    await sleep(250);
    stuck = await countProcessing(db);
  }
  return stuck;
}

/** The service's warnings and errors, grouped by their first line with numbers blanked (job ids, timings). */
function groupedWarnings(fleet: ServiceFleet): Record<string, number> {
  const warnings: Record<string, number> = {};
  for (const { msg } of fleet.members.flatMap((m) => m.child.logs)) {
    const key = String(msg)
      .split('\n')[0]!
      .replace(/\d+(\.\d+)?/g, 'N')
      .slice(0, 200);
    warnings[key] = (warnings[key] ?? 0) + 1;
  }
  return warnings;
}

/** Logs what went wrong with the processes that exited badly, with the errors they logged. */
function reportBadExits(fleet: ServiceFleet, progress: (line: string) => void): void {
  for (const m of [...fleet.sigtermNotZero, ...fleet.unexpectedExits]) {
    const errors = m.child.logs.filter((l) => Number(l.level) >= 50).map((l) => `${String(l.msg)}: ${JSON.stringify(l.err ?? '')}`);
    const signalled = m.signalledAt === undefined ? 'unsignalled' : `${m.signal} ${m.signalledAt - m.upAt} ms after its start line`;
    progress(`pid ${m.child.process.pid} (${signalled}) exited ${m.exit}; errors logged: ${errors.join(' | ') || 'none'}`);
  }
}

runScript({
  usage: `usage: npm run chaos -- [--events <n>] [--duration <seconds>] [--processes <n>] [--database-url <url>] [--keep] [--json]

Creates a database stripe_inbox_chaos_<random> on the Postgres server of --database-url (default
DATABASE_URL, else ${DEFAULT_SERVER}; its user must be allowed to
CREATE DATABASE), starts --processes (default 3) service processes on it, and over --duration
seconds (default 60) sends --events (default 5000) paid checkout.session.completed events, ~20 %
of them delivered twice and ~10 % followed by a second Event object, retrying what is not answered
200. Meanwhile it SIGKILLs or SIGTERMs a process every few seconds (one always stays up), restarts
it, and sweeps every ${SWEEP_EVERY_MS / 1000} s. Then it waits for the inbox to drain, stops every process with SIGTERM
and drops the database (--keep keeps it). Exits 1 on a double grant, a lost payment, a SIGTERM
that did not exit 0, a process that died unasked, or an inbox that did not drain.`,
  options: {
    events: { type: 'string', default: '5000' },
    duration: { type: 'string', default: '60' },
    processes: { type: 'string', default: '3' },
    'database-url': { type: 'string' },
    keep: { type: 'boolean' },
  },
  async run({ values }, ctx) {
    const events = wholeNumberOption(values.events, '--events', { min: 1, max: 1_000_000, example: '5000' });
    const durationMs = wholeNumberOption(values.duration, '--duration', { min: 1, max: 3_600, example: '60' }) * 1000;
    const processes = wholeNumberOption(values.processes, '--processes', { min: 2, max: 16, example: '3' });
    if (events / (durationMs / 1000) > 500) throw new UsageError('--events must be at most 500 per second of --duration, e.g. --events 5000 --duration 60');
    const serverUrl = typeof values['database-url'] === 'string' ? values['database-url'] : (ctx.config.databaseUrl ?? DEFAULT_SERVER);
    if (!/^postgres(ql)?:\/\/[^/]+/.test(serverUrl)) throw new UsageError(`--database-url must be a postgres:// URL, e.g. --database-url ${DEFAULT_SERVER}`);

    const began = Date.now();
    const progress = (line: string) => process.stderr.write(`chaos: ${((Date.now() - began) / 1000).toFixed(1)} s: ${line}\n`);
    const name = `stripe_inbox_chaos_${randomBytes(4).toString('hex')}`;
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const secret = `whsec_chaos_${randomBytes(24).toString('hex')}`;
    const maxAttempts = ctx.config.maxAttempts;
    const fleet = chaosFleet(url.toString(), secret, maxAttempts, progress);
    const { signal, release } = onInterrupt(fleet, progress);
    const interrupted = { json: { interrupted: true }, text: 'chaos: interrupted', exitCode: 130 };

    await onServer(serverUrl, `create database "${name}"`);
    let database: Db | undefined;
    try {
      database = openDatabase(url.toString(), { maxConnections: 4, applicationName: 'stripe-inbox-chaos' });
      const { db } = database;
      await migrate(database.pool, ctx.logger, await serviceMigrations(), { runWorkerMigrations });
      const orders = await createOrders(db, events, signal);
      const plan = planDeliveries(orders);
      progress(`database ${name}: ${orders.length} orders; starting ${processes} processes`);
      for (let i = 0; i < processes && !signal.aborted; i++) fleet.start();
      await fleet.started();
      if (signal.aborted) return interrupted;
      if (fleet.live().length === 0) throw new Error(`no service process started: ${fleet.lastStartError}`);

      progress(`sending ${plan.length} deliveries over ${durationMs / 1000} s; killing and sweeping`);
      let swept = 0;
      const sweep = async () => {
        const result = await sweepStaleEvents(db, { staleAfterMs: STALE_AFTER_SECONDS * 1000, maxAttempts }).catch(() => undefined);
        swept += result?.reclaimed ?? 0;
      };
      const sent = await sendKillingAndSweeping(plan, fleet, secret, durationMs, signal, sweep);
      const sendingEnded = Date.now();
      if (signal.aborted) return interrupted;

      progress('sending done; waiting until no event is processing');
      const stuck = await drain(db, sendingEnded, signal, sweep, progress);
      const drainedAt = Date.now();
      await fleet.stopAll();
      if (signal.aborted) return interrupted;

      const result = await outcome(db, [...sent.acknowledged]);
      const warnings = groupedWarnings(fleet);
      const f = {
        events_sent: orders.length,
        deliveries: sent.deliveries,
        retried: sent.retried,
        never_acknowledged: orders.length - sent.acknowledged.size,
        orders_granted: result.granted,
        double_grants: result.double_grants,
        balance_mismatches: result.balance_mismatches,
        lost: result.lost,
        kills: fleet.kills,
        sigterm_exits_not_0: fleet.sigtermNotZero.length,
        unexpected_exits: fleet.unexpectedExits.length,
        stuck_processing: stuck,
        drain_ms_after_last_kill: stuck === 0 ? drainedAt - (fleet.lastKillAt ?? sendingEnded) : null,
        drain_ms_after_sending: stuck === 0 ? drainedAt - sendingEnded : null,
        swept_by_chaos: swept,
        event_statuses: result.event_statuses,
        delivery_failures: sent.failures,
        service_warnings: warnings,
        elapsed_ms: Date.now() - began,
        kept_database: values.keep ? url.toString() : null,
      };
      const passed = [f.double_grants, f.balance_mismatches, f.lost, f.sigterm_exits_not_0, f.unexpected_exits, stuck].every((n) => n === 0);
      for (const [msg, n] of Object.entries(warnings)) progress(`the service logged ${n} × ${msg}`);
      reportBadExits(fleet, progress);
      const text =
        `chaos ${passed ? 'PASS' : 'FAIL'}: ${f.events_sent} events sent, ${f.deliveries} deliveries (${f.retried} retried, ${f.never_acknowledged} never acknowledged), ` +
        `${f.orders_granted} orders granted, ${f.double_grants} double grants (${f.balance_mismatches} balance mismatches), ${f.lost} lost, ` +
        `kills ${f.kills.SIGKILL} SIGKILL / ${f.kills.SIGTERM} SIGTERM, ${f.sigterm_exits_not_0} SIGTERM exits not 0, ${f.unexpected_exits} unexpected exits, ` +
        (stuck === 0
          ? `drained ${f.drain_ms_after_last_kill} ms after the last kill (${f.drain_ms_after_sending} ms after sending ended)`
          : `${stuck} events still processing after ${DRAIN_TIMEOUT_MS / 1000} s`);
      return { json: { passed, ...f }, text, exitCode: passed ? 0 : 1 };
    } finally {
      await fleet.killAll();
      await database?.close();
      if (values.keep) progress(`kept database ${url.toString()}`);
      else await onServer(serverUrl, `drop database if exists "${name}" with (force)`);
      release();
    }
  },
});
