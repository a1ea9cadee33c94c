// The compose stack under a real Docker engine, as a user runs it (`npm run test:compose`; CI runs
// it after the suite): build and health from a copy of this checkout with only .env filled in,
// the quick start through the published port, a SIGKILL of node mid-burst, a Postgres restart
// under load, a rolling deploy as Coolify does it (ROLE=all, then ROLE=web with two workers),
// the ops commands, stop, and data kept across down + up. One stack, the steps in order; each
// prints its figures (also in artifacts/compose-figures.json; docs/deploy.md keeps a run's).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { checkoutSession, sampleEvent, signDelivery, type SampleEvent } from '../../src/stripe/sample-events.js';
import { ComposeStack, startDockerEngine, type Container } from '../support/compose-stack.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';
import { repoPath } from './deploy-files.js';

const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('hex')}`;
const API_TOKEN = randomBytes(24).toString('hex');
const ADMIN_TOKEN = randomBytes(24).toString('hex');
const figures: Record<string, unknown> = {};

let stack: ComposeStack;
let stripe: OfflineStripe;
let published: string;

function figure(t: TestContext, name: string, value: unknown): void {
  figures[name] = value;
  t.diagnostic(`${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

before(async () => {
  const docker = startDockerEngine();
  // Listening on every address: the containers reach it as host.docker.internal.
  stripe = await startOfflineStripe({ host: '0.0.0.0' });
  const port = await freePort();
  published = `http://127.0.0.1:${port}`;
  stack = new ComposeStack(docker, {
    POSTGRES_PASSWORD: randomBytes(16).toString('hex'),
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_SECRET_KEY: `sk_test_${randomBytes(16).toString('hex')}`,
    STRIPE_API_BASE: `http://host.docker.internal:${stripe.port}`,
    API_TOKEN,
    ADMIN_TOKEN,
    CHECKOUT_SUCCESS_URL: 'https://shop.example/paid',
    CHECKOUT_CANCEL_URL: 'https://shop.example/cart',
    APP_PORT: String(port),
    // Every request of the test comes from one address; the default (1,200 a minute) is for
    // one client among many.
    RATE_LIMIT_PER_MINUTE: '100000',
    // The sweep's patience, so that what a crash or an outage leaves behind is reclaimable within
    // the test (production keeps 300).
    STALE_AFTER_SECONDS: '15',
  });
});

after(async () => {
  mkdirSync(repoPath('artifacts'), { recursive: true });
  writeFileSync(repoPath('artifacts/compose-figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
  if (process.env.KEEP_STACK) console.log(`# stack kept: ${stack.dir} (project ${stack.project})`);
  else await stack?.down();
  await stripe?.close();
});

// ---- the service from outside, as the team's app and Stripe see it -------------------------

/**
 * A call as the team's app makes it: POSTs carry an Idempotency-Key, and a 503 (Stripe calls in
 * flight at their cap, the database away) is retried after its Retry-After with the same key.
 */
async function api<T>(base: string, path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = init.method ?? 'GET';
  const key = randomBytes(12).toString('hex');
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${API_TOKEN}`, 'content-type': 'application/json', ...(method === 'POST' && { 'idempotency-key': key }) },
      ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
    });
    if (response.ok) return (await response.json()) as T;
    const text = await response.text();
    if (response.status !== 503 || attempt === 20) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
  }
}

interface Order {
  orderId: string;
  accountId: string;
  event: SampleEvent;
}

/** Orders through POST /api/checkout, each for its own account, with the paid event Stripe would send for it. */
async function paidOrders(prefix: string, count: number): Promise<Order[]> {
  const [pkg] = await api<Array<{ id: string; amount: number; currency: string }>>(published, '/api/packages');
  const orders: Order[] = [];
  for (let i = 0; i < count; i += 10) {
    orders.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
          const accountId = `acct_${prefix}_${i + j}`;
          const created = await api<{ order_id: string; checkout_session_id: string }>(published, '/api/checkout', {
            method: 'POST',
            body: { package_id: pkg!.id, account_id: accountId },
          });
          const session = checkoutSession({ orderId: created.order_id, amount: pkg!.amount, currency: pkg!.currency, sessionId: created.checkout_session_id });
          return { orderId: created.order_id, accountId, event: sampleEvent('checkout.session.completed', session) };
        }),
      )),
    );
  }
  return orders;
}

interface Deliveries {
  acknowledged: Set<string>;
  /** Every answer that was not 2xx, by status ('network' for no answer at all). */
  refused: Record<string, number>;
  /** 503s that came without Retry-After. */
  withoutRetryAfter: number;
  /** When answers were 503: first and last, ms since the deliveries began. */
  unavailable: { from?: number; to?: number };
}

/**
 * Delivers each event as Stripe does: signed anew each attempt, retried until it gets a 2xx (here
 * after 200 ms, not Stripe's backoff), one event per worker of `concurrency`, each worker resting
 * `paceMs` between events. `target` picks where each attempt goes (the published port, or a
 * proxy's choice among containers).
 */
async function deliver(
  events: SampleEvent[],
  target: () => string,
  options: { concurrency?: number; paceMs?: number; deadlineMs?: number } = {},
): Promise<Deliveries> {
  const result: Deliveries = { acknowledged: new Set(), refused: {}, withoutRetryAfter: 0, unavailable: {} };
  const began = Date.now();
  const deadline = began + (options.deadlineMs ?? 180_000);
  const queue = [...events];
  const worker = async () => {
    for (let event = queue.shift(); event; event = queue.shift()) {
      for (;;) {
        if (Date.now() > deadline) throw new Error(`event ${event.id} not acknowledged within the deadline`);
        const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
        const response = await fetch(`${target()}/webhooks/stripe`, { method: 'POST', body, headers, signal: AbortSignal.timeout(30_000) }).catch(
          () => undefined,
        );
        await response?.arrayBuffer();
        if (response && response.status >= 200 && response.status < 300) {
          result.acknowledged.add(event.id);
          if (options.paceMs) await sleep(options.paceMs);
          break;
        }
        const status = response ? String(response.status) : 'network';
        result.refused[status] = (result.refused[status] ?? 0) + 1;
        if (response?.status === 503) {
          if (!response.headers.get('retry-after')) result.withoutRetryAfter++;
          result.unavailable.from ??= Date.now() - began;
          result.unavailable.to = Date.now() - began;
        }
        await sleep(200);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  return result;
}

const idList = (ids: Iterable<string>) => `'{${[...ids].join(',')}}'`;

/** Every order paid and granted exactly once: its own account holds one package's credits. */
async function assertGrantedOnce(orders: Order[], timeoutMs = 60_000): Promise<void> {
  const accounts = idList(orders.map((o) => o.accountId));
  const [credits] = (await stack.psql(`select credits from packages order by amount limit 1`))[0]!;
  await waitFor(
    `${orders.length} orders granted`,
    async () => (await stack.count(`select count(*) from credit_grants where order_id = any(${idList(orders.map((o) => o.orderId))})`)) === orders.length,
    { timeoutMs, intervalMs: 500 },
  );
  const rows = await stack.psql(
    `select count(*), count(*) filter (where granted = ${Number(credits)}) from account_credits where account_id = any(${accounts})`,
  );
  assert.deepEqual(rows[0], [String(orders.length), String(orders.length)], 'each account granted one package, never two');
  assert.equal(await stack.count(`select count(*) from orders where order_id = any(${idList(orders.map((o) => o.orderId))}) and status <> 'paid'`), 0);
}

/**
 * The sweep as an operator runs it (`docker compose exec app node dist/scripts/sweep.js`), every
 * 5 s until every order is granted, then the grants checked: what it reclaims must have waited
 * STALE_AFTER_SECONDS.
 */
async function sweepUntilGranted(orders: Order[]): Promise<void> {
  const ids = idList(orders.map((o) => o.orderId));
  await waitFor(
    'the sweep to reclaim what was left',
    async () => {
      await stack.compose(['exec', '-T', 'app', 'node', 'dist/scripts/sweep.js', '--json']);
      return (await stack.count(`select count(*) from credit_grants where order_id = any(${ids})`)) === orders.length;
    },
    { timeoutMs: 90_000, intervalMs: 5_000 },
  );
  await assertGrantedOnce(orders);
}

/** Nothing left 'processing': every event settled, none waiting for the sweep or a retry. */
async function assertSettled(timeoutMs = 30_000): Promise<void> {
  const stuck = `select event_id, type, attempts, last_error from stripe_events where status = 'processing' order by received_at`;
  await waitFor('every event settled', async () => (await stack.psql(stuck)).length === 0, { timeoutMs, intervalMs: 500 }).catch(async (error: unknown) => {
    throw new Error(`events still processing: ${JSON.stringify(await stack.psql(stuck))}`, { cause: error });
  });
}

async function appContainer(service = 'app'): Promise<Container> {
  const [id] = await stack.containerIds(service);
  assert.ok(id, `no ${service} container`);
  return stack.inspect(id);
}

async function waitHealthy(id: string, timeoutMs = 120_000): Promise<number> {
  const began = Date.now();
  await waitFor(`container ${id.slice(0, 12)} healthy`, async () => (await stack.inspect(id)).health === 'healthy', { timeoutMs, intervalMs: 250 });
  return Date.now() - began;
}

async function version(base: string): Promise<string> {
  return ((await (await fetch(`${base}/healthz`)).json()) as { version: string }).version;
}

// ---- the steps ------------------------------------------------------------------------------

test('up --build from a fresh copy with only .env filled in: both containers healthy, the image small enough to ship', async (t) => {
  const began = Date.now();
  await stack.compose(['up', '-d', '--build'], 900_000);
  const app = await appContainer();
  const postgres = await stack.inspect((await stack.containerIds('postgres'))[0]!);
  await waitHealthy(app.id);
  assert.equal((await stack.inspect(postgres.id)).health, 'healthy');
  figure(t, 'seconds from up --build to healthy', seconds(Date.now() - began));

  // Healthy again from a cold start with the image built: what a restart or a deploy waits.
  await stack.compose(['stop', 'app'], 120_000);
  const restarted = Date.now();
  await stack.compose(['start', 'app'], 120_000);
  await waitHealthy(app.id);
  figure(t, 'seconds from start to healthy (image built)', seconds(Date.now() - restarted));

  const size = Number((await stack.dockerCli(['image', 'inspect', '-f', '{{.Size}}', `${stack.project}-app`])).trim());
  figure(t, 'image size MB', Math.round(size / 1e6));
  figure(t, 'idle memory MiB (app, ROLE=all)', Math.round(await stack.memoryMiB(app.id)));
  assert.deepEqual(await (await fetch(`${published}/readyz`)).json(), { ready: true });
});

test('the quick start through the published port: a package paid once for three deliveries, then a subscription', async () => {
  const cli = promisify(execFile);
  const sendEvent = (args: string[]) =>
    cli('npm', ['run', '-s', 'send-event', '--', ...args, '--url', published, '--json'], {
      cwd: repoPath('.'),
      env: { ...process.env, NODE_ENV: 'development', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, API_TOKEN, ADMIN_TOKEN, DATABASE_URL: '' },
    });
  const order = await api<{ order_id: string }>(published, '/api/checkout', { method: 'POST', body: { package_id: 'starter', account_id: 'acct_quickstart' } });
  await sendEvent(['checkout.session.completed', '--order', order.order_id, '--times', '3']);
  await waitFor('the order to be granted', async () => (await api<{ granted: number }>(published, '/api/accounts/acct_quickstart/quota')).granted > 0);
  // Three deliveries of one event: the quota holds one package.
  const [credits] = (await stack.psql(`select credits from packages where package_id = 'starter'`))[0]!;
  await waitFor('every delivery to be settled', async () => (await stack.count(`select count(*) from stripe_events where status = 'processing'`)) === 0);
  assert.equal((await api<{ granted: number }>(published, '/api/accounts/acct_quickstart/quota')).granted, Number(credits));

  const subscription = await api<{ subscription_id: string }>(published, '/api/subscriptions', {
    method: 'POST',
    body: { plan_id: 'pro_monthly', account_id: 'acct_quickstart_sub' },
  });
  await sendEvent(['--subscription', subscription.subscription_id]);
  const [planCredits] = (await stack.psql(`select credits from plans where plan_id = 'pro_monthly'`))[0]!;
  await waitFor(
    'the first period to be granted',
    async () => (await api<{ granted: number }>(published, '/api/accounts/acct_quickstart_sub/quota')).granted === Number(planCredits),
    { timeoutMs: 30_000 },
  );
  // Stripe's own order sends customer.subscription.created before the checkout that links it, so
  // some of the period's events wait for a retry: the status is Stripe's once every one settled.
  await assertSettled();
  const view = await api<{ status: string }>(published, `/api/subscriptions/${subscription.subscription_id}`);
  assert.equal(view.status, 'active');
});

test('SIGKILL of node mid-burst: the container restarts, the sweep reclaims, every order granted once', async (t) => {
  const orders = await paidOrders('crash', 150);
  const before = await appContainer();
  const burst = deliver(
    orders.map((o) => o.event),
    () => published,
  );
  await waitFor(
    'a third of the burst acknowledged',
    () => stack.count(`select count(*) from stripe_events where event_id = any(${idList(orders.map((o) => o.event.id))})`).then((n) => n >= 50),
    { timeoutMs: 60_000, intervalMs: 50 },
  );
  // Not `docker kill`: that counts as a manual stop, and the restart policy would not apply.
  process.kill(await stack.nodePid(before.id), 'SIGKILL');
  const killed = Date.now();
  const deliveries = await burst;
  await waitHealthy(before.id);
  const after = await stack.inspect(before.id);
  assert.equal(after.restartCount, before.restartCount + 1, 'restarted by the restart policy');
  figure(t, 'crash: seconds from SIGKILL to healthy', seconds(Date.now() - killed));
  figure(t, 'crash: deliveries refused while it was down', deliveries.refused);

  // What the killed process had claimed and not finished is 'processing' with no live worker:
  // the sweep (its cron, or an operator now) reclaims it.
  await sweepUntilGranted(orders);
  await assertSettled();
  figure(t, 'memory after the burst MiB (app, ROLE=all)', Math.round(await stack.memoryMiB(before.id)));
});

test('Postgres restarts under load: 503 with Retry-After while it is down, then recovery without restarting the app', async (t) => {
  const orders = await paidOrders('pgrestart', 300);
  const app = await appContainer();
  const readiness: Array<{ at: number; ok: boolean }> = [];
  let watching = true;
  const began = Date.now();
  const watcher = (async () => {
    while (watching) {
      const ok = await fetch(`${published}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false,
      );
      readiness.push({ at: Date.now() - began, ok });
      await sleep(200);
    }
  })();
  // Paced (80 a second) so that deliveries keep arriving before, during and after the restart.
  const burst = deliver(
    orders.map((o) => o.event),
    () => published,
    { concurrency: 4, paceMs: 50 },
  );
  await waitFor(
    'part of the burst acknowledged',
    () => stack.count(`select count(*) from stripe_events where event_id = any(${idList(orders.map((o) => o.event.id))})`).then((n) => n >= 40),
    { timeoutMs: 60_000, intervalMs: 50 },
  );
  // A restart in two steps, so that the outage lasts until the service has noticed it (a bare
  // `restart` is over within a second here, shorter than /readyz's one-second cache).
  await stack.compose(['stop', 'postgres'], 120_000);
  await waitFor('/readyz to answer 503', () => Promise.resolve(readiness.at(-1)?.ok === false), { timeoutMs: 30_000 });
  await stack.compose(['start', 'postgres'], 120_000);
  const deliveries = await burst;
  await waitFor('/readyz to answer 200 again', () => Promise.resolve(readiness.at(-1)?.ok === true), { timeoutMs: 30_000 });
  watching = false;
  await watcher;

  assert.deepEqual(
    Object.keys(deliveries.refused).filter((s) => s !== '503'),
    [],
    'nothing but 503 while Postgres was down',
  );
  assert.ok(deliveries.refused['503'], 'deliveries were refused with 503 while it was down');
  assert.equal(deliveries.withoutRetryAfter, 0, 'every 503 carries Retry-After');
  assert.equal((await stack.inspect(app.id)).startedAt, app.startedAt, 'the app container was not restarted');

  // Most are fulfilled as soon as the worker is back; a job whose fetch or failure was in flight
  // when the connection broke stays locked by graphile-worker for hours, and its event is the
  // sweep's to reclaim once STALE_AFTER_SECONDS have passed (an operator's `sweep`, or its cron).
  const ids = idList(orders.map((o) => o.orderId));
  const grantedWithin20s = await waitFor(
    'all granted',
    async () => (await stack.count(`select count(*) from credit_grants where order_id = any(${ids})`)) === orders.length,
    { timeoutMs: 20_000, intervalMs: 500 },
  ).then(
    () => orders.length,
    () => stack.count(`select count(*) from credit_grants where order_id = any(${ids})`),
  );
  await sweepUntilGranted(orders);

  // A new event after the restart, delivered once: fulfilled within seconds, by a worker whose
  // connections (LISTEN included) came back on their own.
  const [late] = await paidOrders('pgrestart_late', 1);
  const sent = Date.now();
  const single = await deliver([late!.event], () => published, { concurrency: 1 });
  assert.deepEqual(single.refused, {});
  await assertGrantedOnce([late!], 10_000);
  const lateMs = Date.now() - sent;
  await assertSettled();
  const down = readiness.filter((r) => !r.ok);
  figure(t, 'postgres restart', {
    acknowledged: deliveries.acknowledged.size,
    refused: deliveries.refused,
    'seconds of 503 (deliveries)': seconds(deliveries.unavailable.to! - deliveries.unavailable.from!),
    'seconds /readyz was 503': seconds(down.at(-1)!.at - down[0]!.at),
    'fulfilled within 20 s, without the sweep': `${grantedWithin20s} of ${orders.length}`,
    'ms from delivery to granted, after the restart': lateMs,
  });
});

/**
 * What Coolify's Traefik does for a rolling deploy: routes to every container whose health check
 * passes (here /readyz, polled every 500 ms), round robin.
 */
class Router {
  private readonly healthy = new Set<string>();
  private readonly watched = new Set<string>();
  private next = 0;
  private stopped = false;
  private readonly polls: Promise<void>[] = [];

  watch(ip: string): void {
    const base = `http://${ip}:3000`;
    this.watched.add(base);
    this.polls.push(
      (async () => {
        while (!this.stopped && this.watched.has(base)) {
          const ok = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
            (r) => r.ok,
            () => false,
          );
          if (ok) this.healthy.add(base);
          else this.healthy.delete(base);
          await sleep(500);
        }
      })(),
    );
  }

  /** A target for the next request; when none is healthy, the one last seen (its answer is retried). */
  pick = (): string => {
    const targets = [...this.healthy];
    if (targets.length === 0) return [...this.watched].at(-1)!;
    return targets[this.next++ % targets.length]!;
  };

  targets(): string[] {
    return [...this.healthy];
  }

  async close(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.polls);
  }
}

/**
 * A rolling deploy of `services` as Coolify does it: a new image is built, a container of it
 * starts beside each running one on the same network and database (`compose run`: no published
 * port, the service's own environment and health check), becomes healthy and takes traffic; the
 * old ones then get SIGTERM through `docker stop`, while webhooks keep arriving at both.
 */
async function rollingDeploy(t: TestContext, label: string, release: string, services: { web: string; workers: number }): Promise<void> {
  const orders = await paidOrders(`roll_${release.replace(/\W/g, '_')}`, 200);
  const oldWeb = await appContainer(services.web);
  const oldWorkers = services.workers > 0 ? await Promise.all((await stack.containerIds('worker')).map((id) => stack.inspect(id))) : [];
  assert.equal(oldWorkers.length, services.workers);
  const router = new Router();
  router.watch(oldWeb.ip);
  await waitFor('the router to see the old container', () => Promise.resolve(router.targets().length === 1));

  stack.release(release);
  await stack.compose(['build', ...(services.workers > 0 ? [services.web, 'worker'] : [services.web])], 900_000);

  const newWeb = await stack.inspect(
    (await stack.compose(['run', '-d', '--no-deps', '--name', `${stack.project}-${services.web}-${release.replace(/\W/g, '')}`, services.web])).trim(),
  );
  const newWorkers = await Promise.all(
    Array.from({ length: services.workers }, async (_, i) =>
      stack.inspect((await stack.compose(['run', '-d', '--no-deps', '--name', `${stack.project}-worker-${release.replace(/\W/g, '')}-${i}`, 'worker'])).trim()),
    ),
  );
  await Promise.all([newWeb, ...newWorkers].map((c) => waitHealthy(c.id)));
  assert.equal(await version(`http://${newWeb.ip}:3000`), release, 'the new container runs the new release');
  assert.notEqual(await version(`http://${oldWeb.ip}:3000`), release);
  router.watch(newWeb.ip);
  await waitFor('the router to route to both', () => Promise.resolve(router.targets().length === 2));

  // Paced (4 at a time, 100 ms apart: 40 a second), so that deliveries arrive at both containers
  // before, during and after the old one's stop.
  const sending = deliver(
    orders.map((o) => o.event),
    router.pick,
    { concurrency: 4, paceMs: 100 },
  );
  await waitFor(
    'deliveries to both',
    async () => (await stack.count(`select count(*) from stripe_events where event_id = any(${idList(orders.map((o) => o.event.id))})`)) >= 40,
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  const stopping = Date.now();
  const stops = await Promise.all(
    [oldWeb, ...oldWorkers].map(async (c) => {
      await stack.dockerCli(['stop', c.id], 120_000);
      return { name: c.name, seconds: seconds(Date.now() - stopping), exitCode: (await stack.inspect(c.id)).exitCode };
    }),
  );
  const deliveries = await sending;
  await router.close();

  for (const stop of stops) assert.equal(stop.exitCode, 0, `${stop.name} exited 0`);
  assert.deepEqual(
    Object.keys(deliveries.refused).filter((s) => s !== '503'),
    [],
    'nothing but 503 during the hand-over',
  );
  assert.equal(deliveries.withoutRetryAfter, 0);
  await assertGrantedOnce(orders);
  await assertSettled();
  figure(t, `rolling deploy (${label})`, {
    acknowledged: deliveries.acknowledged.size,
    'answered non-2xx': deliveries.refused,
    'fulfilled once': orders.length,
    'seconds to stop the old containers': Object.fromEntries(stops.map((s) => [s.name, s.seconds])),
  });

  // Back to compose's own containers, on the new image, for the steps that follow; the run
  // containers go once those are healthy (the same hand-over, without traffic).
  await stack.compose(['up', '-d', '--no-build'], 300_000);
  for (const id of [...(await stack.containerIds(services.web)), ...(services.workers > 0 ? await stack.containerIds('worker') : [])]) {
    const c = await stack.inspect(id);
    if (c.running) await waitHealthy(id);
  }
  for (const c of [newWeb, ...newWorkers]) await stack.dockerCli(['rm', '-f', c.id]);
}

test('a rolling deploy with ROLE=all: the old container exits 0, only 503s during the hand-over, every event fulfilled once', async (t) => {
  await rollingDeploy(t, 'ROLE=all', '0.1.1-next', { web: 'app', workers: 0 });
});

test('a rolling deploy with the workers profile: ROLE=web app and two worker containers', async (t) => {
  stack.setEnv({ COMPOSE_PROFILES: 'workers', WORKER_REPLICAS: '2', ROLE: 'web' });
  await stack.compose(['up', '-d'], 900_000);
  for (const id of [...(await stack.containerIds('app')), ...(await stack.containerIds('worker'))]) await waitHealthy(id);
  assert.equal((await stack.containerIds('worker')).length, 2);
  await rollingDeploy(t, 'ROLE=web + 2 workers', '0.1.2-next', { web: 'app', workers: 2 });
});

test('ops commands as docs/deploy.md gives them for a container, stop with exit 0, and data kept across down and up', async (t) => {
  const status = JSON.parse(await stack.compose(['exec', '-T', 'app', 'node', 'dist/scripts/status.js', '--json'])) as Record<string, unknown>;
  assert.ok(status, 'status --json prints JSON');
  JSON.parse(await stack.compose(['exec', '-T', 'app', 'node', 'dist/scripts/sweep.js', '--json']));
  const [evt] = (await stack.psql(`select event_id from stripe_events where status = 'processed' and type = 'checkout.session.completed' limit 1`))[0]!;
  JSON.parse(await stack.compose(['exec', '-T', 'app', 'node', 'dist/scripts/replay.js', evt!, '--json']));

  const counts = `select (select count(*) from stripe_events), (select count(*) from orders), (select count(*) from credit_grants), (select coalesce(sum(granted), 0) from account_credits)`;
  await assertSettled();
  const before = (await stack.psql(counts))[0];

  const ids = [...(await stack.containerIds('app')), ...(await stack.containerIds('worker'))];
  const stopping = Date.now();
  await stack.compose(['stop', 'app', 'worker'], 120_000);
  figure(t, 'seconds to stop (idle, app + 2 workers)', seconds(Date.now() - stopping));
  for (const id of ids) assert.equal((await stack.inspect(id)).exitCode, 0, `${id.slice(0, 12)} exited 0`);

  await stack.compose(['down'], 120_000);
  await stack.compose(['up', '-d', '--no-build'], 300_000);
  for (const id of [...(await stack.containerIds('app')), ...(await stack.containerIds('worker'))]) await waitHealthy(id);
  assert.deepEqual((await stack.psql(counts))[0], before, 'every event, order and grant kept');
});
