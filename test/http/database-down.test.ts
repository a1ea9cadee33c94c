// docs/design.md, invariant 1, the unhappy half: when Postgres cannot be reached the webhook
// answers 503 (Stripe retries it) instead of hanging or acknowledging, /readyz says 503 so the
// proxy stops routing here, and nothing is half-written. The service talks to its database through
// a TCP link this test can cut: existing connections are reset and new ones refused, as when
// Postgres restarts or its host goes away.
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type Db } from '../../src/db/database.js';
import { exampleObject, sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { API_TOKEN, startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

interface PostgresLink {
  readonly url: string;
  /** Resets every open connection and refuses new ones (ECONNREFUSED). */
  cut(): Promise<void>;
  restore(): Promise<void>;
}

async function linkTo(databaseUrl: string): Promise<PostgresLink> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const { port } = server.address() as AddressInfo;
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    restore: () => listen(port),
  };
}

let database: TestDatabase;
let link: PostgresLink;
let linked: Db;
let service: TestService;

before(async () => {
  database = await createTestDatabase();
  link = await linkTo(database.url);
  linked = openDatabase(link.url, { maxConnections: 5 });
  service = await startTestService({ ...linked, url: link.url, name: database.name }, { env: { ROLE: 'web' } });
});
after(async () => {
  await service.close();
  await linked.close();
  await link.cut();
  await database.close();
});

/** Read directly, not through the link. */
async function storedEvent(eventId: string): Promise<{ events: number; jobs: number }> {
  const { rows } = await sql<{ events: number; jobs: number }>`
    select (select count(*)::int from stripe_events where event_id = ${eventId}) as events,
           (select count(*)::int from graphile_worker.jobs j join stripe_events e on e.job_key = j.key where e.event_id = ${eventId}) as jobs`.execute(
    database.db,
  );
  return rows[0]!;
}

const readyz = async () => {
  const response = await fetch(`${service.url}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

test('while Postgres answers, a delivery is stored and /readyz is 200', async () => {
  const event = sampleEvent('charge.refunded', exampleObject('charge'));
  assert.deepEqual(await service.deliver(event), { status: 200, body: { received: true } });
  assert.deepEqual(await storedEvent(event.id), { events: 1, jobs: 1 });
  assert.equal((await readyz()).status, 200);
});

// The timeout turns a hung request into a failure instead of a stuck suite.
test('with Postgres unreachable the webhook answers 503 and stores nothing; /readyz and the API answer 503', { timeout: 20_000 }, async () => {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  await link.cut();
  try {
    const reply = await service.deliver(event);
    assert.equal(reply.status, 503);
    assert.deepEqual(reply.body, { error: 'database unavailable, retry later' });

    // /readyz keeps its database answer for a second.
    const down = await waitFor('/readyz to notice', async () => {
      const reply = await readyz();
      return reply.status === 503 && reply;
    });
    assert.deepEqual(down, { status: 503, body: { ready: false, reason: 'database unreachable' } });
    // Not a 500: an outage is a retry-later for API clients too, and they learn when.
    const api = await fetch(`${service.url}/api/orders/${order.order_id}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
    assert.deepEqual([api.status, api.headers.get('retry-after')], [503, '5']);
    const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
    const webhook = await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body, headers });
    assert.deepEqual([webhook.status, webhook.headers.get('retry-after')], [503, '5']);
  } finally {
    await link.restore();
  }
  assert.deepEqual(await storedEvent(event.id), { events: 0, jobs: 0 });

  // Stripe's retry of the same event, once Postgres is back, is the first to be stored.
  assert.deepEqual(await service.deliver(event), { status: 200, body: { received: true } });
  assert.deepEqual(await storedEvent(event.id), { events: 1, jobs: 1 });
  await waitFor('/readyz to recover', async () => (await readyz()).status === 200);
});

test('a database that went read-only (a standby, a demoted primary) gets 503s, stores nothing, and /readyz says why', { timeout: 20_000 }, async () => {
  const event = paidEvent(await givenOrder(database));
  // What a hot standby or a primary being demoted does to every write: SQLSTATE 25006. New sessions
  // of this database start read-only; the service's own are ended, so its pools open new ones.
  const endServiceSessions = sql`select pg_terminate_backend(pid) from pg_stat_activity
    where datname = ${database.name} and application_name like 'stripe-inbox-%'`;
  await sql`alter database ${sql.id(database.name)} set default_transaction_read_only = on`.execute(database.db);
  await endServiceSessions.execute(database.db);
  try {
    const refused = await waitFor('the webhook to answer 503', async () => {
      const reply = await service.deliver(event);
      return reply.status === 503 && reply;
    });
    assert.deepEqual(refused.body, { error: 'database unavailable, retry later' });
    const down = await waitFor('/readyz to notice', async () => {
      const reply = await readyz();
      return reply.status === 503 && reply;
    });
    assert.deepEqual(down.body, { ready: false, reason: 'database is read-only (a standby?): DATABASE_URL must lead to the primary' });
    // A write through the API is a retry-later too, not an internal error.
    const sweep = await service.call('POST', '/admin/api/sweep');
    assert.deepEqual([sweep.status, sweep.body], [503, { error: 'database unavailable, retry later' }]);
  } finally {
    await sql`alter database ${sql.id(database.name)} reset default_transaction_read_only`.execute(database.db);
    await endServiceSessions.execute(database.db);
  }
  assert.deepEqual(await storedEvent(event.id), { events: 0, jobs: 0 });
  // Stripe retries until acknowledged. The first retry may still get a 503: a pooled connection
  // whose backend was just ended fails its query if the end has not reached the pool yet.
  const stored = await waitFor('a retry to be acknowledged', async () => {
    const reply = await service.deliver(event);
    return reply.status !== 503 && reply;
  });
  assert.deepEqual(stored, { status: 200, body: { received: true } });
  assert.deepEqual(await storedEvent(event.id), { events: 1, jobs: 1 });
  await waitFor('/readyz to recover', async () => (await readyz()).status === 200);
});
