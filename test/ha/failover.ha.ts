// Failover of a highly available Postgres under load (`npm run test:ha`): Patroni + etcd + HAProxy
// on loopback (test/support/ha-cluster.ts), the service a real process connected through HAProxy
// with an ordinary DATABASE_URL, Stripe's deliveries arriving all along. The leader is killed
// mid-burst (SIGKILL of its Postgres, then of its Patroni); Patroni promotes the standby and
// HAProxy follows, and the service carries on without a restart.
//
// Synchronous mode: a 2xx means the standby had the event, so every acknowledged event is on the
// new leader and fulfilled exactly once. Asynchronous mode (Patroni's default) may lose
// acknowledged commits; the test makes that window real by holding back the standby's WAL before
// the kill, shows the loss, then the repair: the running service sees the database's timeline
// changed as soon as its worker reconnects and reconciles from Stripe's Events API, and every lost
// event is fulfilled once with nothing doubled. Each test prints its figures (also in
// artifacts/ha-figures.json; docs/deploy.md keeps a run's).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { after, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { createLogger } from '../../src/logger.js';
import { serviceMigrations } from '../../src/modules/index.js';
import { signDelivery, type SampleEvent } from '../../src/stripe/sample-events.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import { spawnService, type ChildService } from '../support/child-service.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { startHaCluster, type HaCluster, type HaNode } from '../support/ha-cluster.js';
import { WEBHOOK_SECRET } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

/** Orders per run, and how many are acknowledged before the leader is killed. */
const ORDERS = Number(process.env.HA_ORDERS ?? 300);
const BEFORE_KILL = Math.floor(ORDERS / 3);
/** Deliveries in flight at once, and each sender's pause between deliveries (~100/s in all). */
const SENDERS = 4;
const PAUSE_MS = 40;
/** Stripe waits far longer before a retry; the test retries soon so the burst spans the switch. */
const RETRY_MS = 250;
const CREDITS_PER_ORDER = 40; // the seeded 'starter' package

const FIGURES_FILE = 'artifacts/ha-figures.json';
const seconds = (ms: number) => Math.round(ms / 100) / 10;
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

function figure(t: TestContext, figures: Record<string, unknown>, name: string, value: unknown): void {
  figures[name] = value;
  t.diagnostic(`${name}: ${JSON.stringify(value)}`);
}

function saveFigures(mode: string, figures: Record<string, unknown>): void {
  mkdirSync('artifacts', { recursive: true });
  const all = existsSync(FIGURES_FILE) ? (JSON.parse(readFileSync(FIGURES_FILE, 'utf8')) as Record<string, unknown>) : {};
  writeFileSync(FIGURES_FILE, `${JSON.stringify({ ...all, [mode]: figures }, null, 2)}\n`);
}

interface Run {
  cluster: HaCluster;
  database: TestDatabase;
  stripe: OfflineStripe;
  service: ChildService;
  events: SampleEvent[];
}

/** A cluster, the service's database on it (migrated through HAProxy), the orders and the service. */
async function setUp(synchronous: boolean): Promise<Run> {
  const cluster = await startHaCluster({ synchronous });
  cleanups.push(() => cluster.stop());
  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  await admin.connect();
  await admin.query('create database inbox');
  await admin.end();
  const url = cluster.url('inbox');
  const database = openTestDatabase(url, 'inbox', { maxConnections: 4 });
  cleanups.push(() => database.close());
  await migrate(database.pool, createLogger('silent'), await serviceMigrations(), { runWorkerMigrations });
  const stripe = await startOfflineStripe();
  cleanups.push(() => stripe.close());
  const orders = await Promise.all(Array.from({ length: ORDERS }, () => givenOrder(database)));
  const events = orders.map((order) => paidEvent(order));
  const service = await spawnService(url, { STRIPE_API_BASE: stripe.url, LOG_LEVEL: 'info' });
  cleanups.push(async () => {
    service.process.kill('SIGKILL');
    await service.exited;
  });
  return { cluster, database, stripe, service, events };
}

interface Delivery {
  status: number;
  at: number;
}

/**
 * Delivers every event as Stripe does: the event is listed in Stripe's Events API (which the
 * reconcile reads) from the moment it happens, and a refusal (or no answer) is retried until a
 * 2xx. Returns when all are acknowledged; `acked` fills as they are, with the time of each.
 */
async function deliverAll({ service, stripe, events }: Run, acked: Map<string, number>, refusals: Delivery[]): Promise<void> {
  const queue = [...events];
  const sender = async () => {
    for (let event = queue.shift(); event; event = queue.shift()) {
      stripe.addEvent({ ...event });
      for (;;) {
        const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
        const status = await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body, headers, signal: AbortSignal.timeout(30_000) }).then(
          (r) => r.status,
          () => 0,
        );
        if (status >= 200 && status < 300) {
          acked.set(event.id, Date.now());
          break;
        }
        refusals.push({ status, at: Date.now() });
        await sleep(RETRY_MS);
      }
      await sleep(PAUSE_MS);
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
}

/** What the database says of the events: present, fulfilled, and credits granted per order. */
async function outcome(database: TestDatabase, events: SampleEvent[]) {
  const ids = events.map((event) => event.id);
  const { rows } = await sql<{ present: number; processed: number; grants: number; orders_granted_twice: number; credits: number }>`
    select (select count(*)::int from stripe_events where event_id = any(${ids})) as present,
           (select count(*)::int from stripe_events where event_id = any(${ids}) and status = 'processed') as processed,
           (select count(*)::int from credit_grants) as grants,
           (select count(*)::int from (select order_id from credit_grants group by order_id having count(*) > 1) twice) as orders_granted_twice,
           (select coalesce(sum(granted), 0)::int from account_credits) as credits`.execute(database.db);
  return rows[0]!;
}

/** The run's 503s: how many, and the seconds from the first to the last. */
function refusalWindow(refusals: Delivery[]) {
  if (refusals.length === 0) return { refusals: 0, seconds: 0, statuses: [] };
  const times = refusals.map((r) => r.at);
  return { refusals: refusals.length, seconds: seconds(Math.max(...times) - Math.min(...times)), statuses: [...new Set(refusals.map((r) => r.status))] };
}

interface Failover {
  /** Each acknowledged event's id, with the time of its 2xx. */
  acked: Map<string, number>;
  killedAt: number;
  promotedAt: number;
}

/**
 * Delivers every event; a third of the way in, runs `beforeKill`, kills the leader and waits for
 * the standby's promotion and for the last delivery's 2xx. Records the switch's figures: how long
 * the promotion took, and the refusals (every one a 503: Stripe retries it).
 */
async function failOverUnderLoad(
  t: TestContext,
  run: Run,
  figures: Record<string, unknown>,
  beforeKill?: (leader: HaNode, acked: ReadonlyMap<string, number>) => Promise<void>,
): Promise<Failover> {
  const leader = await run.cluster.waitForLeader();
  const acked = new Map<string, number>();
  const refusals: Delivery[] = [];
  const load = deliverAll(run, acked, refusals);
  await waitFor('the first third to be acknowledged', () => Promise.resolve(acked.size >= BEFORE_KILL), { timeoutMs: 60_000 });
  await beforeKill?.(leader, acked);
  const killedAt = Date.now();
  run.cluster.kill(leader);
  const promoted = await run.cluster.waitForLeader({ not: leader });
  const promotedAt = Date.now();
  await load;
  assert.notEqual(promoted, leader);

  figure(t, figures, 'promotion_seconds', seconds(promotedAt - killedAt));
  const window = refusalWindow(refusals);
  figure(t, figures, 'refused_deliveries', window);
  // A delivery during the switch is refused with 503, never a 2xx that did not commit.
  assert.deepEqual(
    window.statuses.filter((status) => status !== 503),
    [],
    'every refusal during the switch is a 503',
  );
  assert.ok(window.refusals > 0, 'deliveries arrived during the switch');
  return { acked, killedAt, promotedAt };
}

test('synchronous mode: the leader killed mid-burst; every acknowledged event is on the new leader, fulfilled once', async (t) => {
  const figures: Record<string, unknown> = {};
  const run = await setUp(true);
  const { acked, promotedAt } = await failOverUnderLoad(t, run, figures);

  const result = await waitFor(
    'every acknowledged event to be fulfilled',
    async () => {
      const now = await outcome(run.database, run.events);
      return now.processed === ORDERS && now;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  figure(t, figures, 'acknowledged', acked.size);
  figure(t, figures, 'present_on_new_leader', result.present);
  figure(t, figures, 'fulfilled_once', result.grants - result.orders_granted_twice);
  assert.deepEqual(result, { present: ORDERS, processed: ORDERS, grants: ORDERS, orders_granted_twice: 0, credits: ORDERS * CREDITS_PER_ORDER });

  // The worker resumed by itself: events acknowledged after the switch were fulfilled promptly,
  // none of them delivered twice (each was acknowledged once, above).
  const afterSwitch = run.events.filter((event) => (acked.get(event.id) ?? 0) > promotedAt).map((event) => event.id);
  const { rows } = await sql<{ p50: number; max: number }>`
    select percentile_cont(0.5) within group (order by extract(epoch from finished_at - received_at))::float as p50,
           max(extract(epoch from finished_at - received_at))::float as max
      from stripe_events where event_id = any(${afterSwitch})`.execute(run.database.db);
  figure(t, figures, 'fulfilment_after_switch_seconds', { events: afterSwitch.length, p50: seconds(rows[0]!.p50 * 1000), max: seconds(rows[0]!.max * 1000) });
  const listenErrors = run.service.logs.filter((line) => typeof line.msg === 'string' && line.msg.includes('notify listener')).length;
  figure(t, figures, 'listen_reconnect_errors', listenErrors);
  saveFigures('synchronous', figures);
});

test('asynchronous mode: acknowledged events lost with the leader come back by reconciliation, fulfilled once', async (t) => {
  const figures: Record<string, unknown> = {};
  const run = await setUp(false);
  let frozenAt = 0;
  const { acked, killedAt, promotedAt } = await failOverUnderLoad(t, run, figures, async (leader, soFar) => {
    // The standby stops receiving WAL (a slow or partitioned replica): what the leader
    // acknowledges from now on exists only on the leader.
    leader.replicationLink.freeze({ alsoNew: true });
    frozenAt = Date.now();
    await waitFor('more events to be acknowledged by the leader alone', () => Promise.resolve(soFar.size >= BEFORE_KILL + 30), { timeoutMs: 60_000 });
  });

  // The repair, by the service that kept running: its worker's LISTEN comes back on the new
  // leader, finds the database's timeline changed and queues a reconcile from Stripe's Events API,
  // which claims what the new leader lacks.
  const repaired = await waitFor(
    'every event, lost ones included, to be fulfilled',
    async () => {
      const now = await outcome(run.database, run.events);
      return now.processed === ORDERS && now;
    },
    { timeoutMs: 90_000, intervalMs: 250 },
  );
  const repairedAt = Date.now();
  assert.deepEqual(repaired, { present: ORDERS, processed: ORDERS, grants: ORDERS, orders_granted_twice: 0, credits: ORDERS * CREDITS_PER_ORDER });

  // Lost: acknowledged before the kill, yet received by the new leader after it — the reconcile
  // claimed them again (their first row died with the old leader).
  const ackedBeforeKill = [...acked].filter(([, at]) => at < killedAt).map(([id]) => id);
  const { rows } = await sql<{ lost: number }>`
    select count(*)::int as lost from stripe_events
     where event_id = any(${ackedBeforeKill}) and received_at > to_timestamp(${killedAt / 1000})`.execute(run.database.db);
  const lost = rows[0]!.lost;
  const recovered = run.service.logs
    .filter((line) => line.msg === 'reconcile claimed events Stripe has and we had lost')
    .reduce((sum, line) => sum + Number(line.claimed), 0);
  figure(t, figures, 'acknowledged', acked.size);
  figure(t, figures, 'acknowledged_while_standby_held_back', [...acked.values()].filter((at) => at > frozenAt && at <= killedAt).length);
  figure(t, figures, 'lost', lost);
  figure(t, figures, 'recovered_by_reconcile', recovered);
  figure(t, figures, 'all_fulfilled_seconds_after_promotion', seconds(repairedAt - promotedAt));
  assert.ok(lost > 0, 'asynchronous replication lost acknowledged events (the window this test makes real)');
  assert.ok(
    run.service.logs.some((line) => typeof line.msg === 'string' && line.msg.includes("the database's identity changed")),
    'the service noticed the failover',
  );
  // It may also claim an event whose delivery Stripe was still retrying: that retry then gets its 2xx as a duplicate.
  assert.ok(recovered >= lost, 'the reconcile claimed the lost events');
  saveFigures('asynchronous', figures);
});
