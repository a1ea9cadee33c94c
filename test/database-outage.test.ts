// A real Postgres outage under load (docs/design.md, invariants 1 and 7): a throwaway Postgres of
// this test's own (never the machine's shared server) is stopped for ten seconds while signed
// events keep arriving at the service, a real process (src/main.ts, which logs and survives the
// rejection graphile-worker 0.18 leaves unhandled when Postgres goes away mid-job). During the
// outage the webhook answers 503 promptly and /readyz 503; the service reconnects by itself when
// Postgres is back; Stripe's retries of what was refused, plus one sweep, leave every order granted
// exactly once and nothing lost.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../src/db/database.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { migrate } from '../src/db/migrate.js';
import { runWorkerMigrations } from '../src/queue/worker-migrations.js';
import { createLogger } from '../src/logger.js';
import { signDelivery } from '../src/stripe/sample-events.js';
import { sweepStaleEvents } from '../src/maintenance/sweep.js';
import type { TestDatabase } from './support/database.js';
import { givenOrder, paidEvent } from './support/factories.js';
import { spawnService, type ChildService } from './support/child-service.js';
import { WEBHOOK_SECRET } from './support/service.js';
import { waitFor } from './support/wait-for.js';
import { serviceMigrations } from '../src/modules/index.js';

const OUTAGE_MS = 10_000;
let dataDir: string;
let postgres: EmbeddedPostgres;
let port: number;
let database: TestDatabase;
let service: ChildService;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'stripe-inbox-outage-'));
  postgres = await startEmbeddedPostgres({ dataDir: join(dataDir, 'postgres'), port: 0 });
  const url = postgres.connectionString;
  port = Number(new URL(url).port);
  const opened = openDatabase(url, { maxConnections: 10 });
  await migrate(opened.pool, createLogger('silent'), await serviceMigrations(), { runWorkerMigrations });
  database = { ...opened, url, name: 'stripe_inbox' };
  service = await spawnService(url, { STALE_AFTER_SECONDS: '1', SWEEP_CRON: '0 0 1 1 *', LOG_LEVEL: 'info' });
});
after(async () => {
  service?.process.kill('SIGTERM');
  await service?.exited;
  await database?.close().catch(() => {});
  // graphile-worker closes its LISTEN connection asynchronously after the pool ends: stopping
  // Postgres under it would terminate it after this file's tests ended (a failure to node:test).
  await waitFor('the service to disconnect', () => otherSessions().then((n) => n === 0), { timeoutMs: 10_000, intervalMs: 100 }).catch(() => {});
  await postgres?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

async function deliver(event: unknown): Promise<number> {
  const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
  return fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body, headers }).then(
    (r) => r.status,
    () => 0,
  );
}

async function otherSessions(): Promise<number> {
  const client = new pg.Client({ connectionString: postgres.connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
    );
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

test('Postgres stopped for ten seconds under load: 503s meanwhile, then every order granted once', async () => {
  const orders = await Promise.all(Array.from({ length: 120 }, () => givenOrder(database)));
  const events = orders.map((order) => paidEvent(order));
  const answers = new Map<string, number>();
  const during: Array<{ status: number; ms: number }> = [];
  let outage = false;

  // About 20 deliveries a second, through the outage and after it.
  const load = (async () => {
    for (const event of events) {
      const started = Date.now();
      const status = await deliver(event);
      answers.set(event.id, status);
      if (outage) during.push({ status, ms: Date.now() - started });
      await sleep(50);
    }
  })();

  await waitFor('load to be under way', () => Promise.resolve(answers.size >= 20));
  await postgres.stop();
  outage = true;
  await waitFor('readiness to report the outage', async () => (await fetch(`${service.url}/readyz`)).status === 503);
  await sleep(OUTAGE_MS);
  postgres = await startEmbeddedPostgres({ dataDir: join(dataDir, 'postgres'), port });
  outage = false;
  await load;

  // Refused promptly, never acknowledged while the database was away.
  assert.ok(during.length > 20, `deliveries were attempted during the outage (${during.length})`);
  assert.ok(
    during.every((d) => d.status === 503),
    `every delivery during the outage got 503: ${JSON.stringify(during.filter((d) => d.status !== 503))}`,
  );
  assert.ok(
    during.every((d) => d.ms < 6_000),
    'no delivery hung',
  );
  await waitFor('readiness to recover', async () => (await fetch(`${service.url}/readyz`)).status === 200, { timeoutMs: 20_000 });

  // Stripe retries everything that was not acknowledged.
  for (const event of events.filter((e) => answers.get(e.id) !== 200)) {
    assert.equal(await deliver(event), 200);
  }
  await waitFor(
    'every event to be fulfilled',
    async () => {
      await sweepStaleEvents(database.db, { staleAfterMs: 1_000, maxAttempts: 10 });
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events where status = 'processed'`.execute(database.db);
      return rows[0]!.n === events.length;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  const { rows } = await sql<{ grants: number; orders: number; credits: number }>`
    select (select count(*)::int from credit_grants) as grants,
           (select count(*)::int from orders where status = 'paid') as orders,
           (select sum(granted)::int from account_credits) as credits`.execute(database.db);
  assert.deepEqual(rows[0], { grants: 120, orders: 120, credits: 120 * 40 });
});
