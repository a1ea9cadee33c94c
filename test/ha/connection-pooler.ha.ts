// The service behind a real PgBouncer (src/db/connection-pooler.ts). Session mode: everything
// works as on a direct connection, LISTEN included. Transaction mode: start-up finds it out, and
// refuses without DATABASE_DIRECT_URL, naming the fix; with it, the worker and migrations go direct
// and a paid order is fulfilled once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { isTransactionPooled, resolveDatabaseUrls } from '../../src/db/connection-pooler.js';
import { openDatabase } from '../../src/db/database.js';
import { signDelivery } from '../../src/stripe/sample-events.js';
import { spawnService, type ChildService } from '../support/child-service.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, grantsOf, paidEvent, quotaOf } from '../support/factories.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { startTestService, WEBHOOK_SECRET } from '../support/service.js';

// The worker polls this rarely in the tests below that say "by LISTEN": a job it runs within the
// test's deadline reached it by LISTEN/NOTIFY.
const NEVER_POLL = { pollIntervalMs: 3_600_000 };

let database: TestDatabase;
let session: PgBouncer;
let transaction: PgBouncer;
const children: ChildService[] = [];

before(async () => {
  database = await createTestDatabase();
  [session, transaction] = await Promise.all([startPgBouncer(database.url, 'session'), startPgBouncer(database.url, 'transaction')]);
});
after(async () => {
  for (const child of children) child.process.kill('SIGKILL');
  await Promise.all([session?.stop(), transaction?.stop()]);
  await database?.close();
});

/** Pays a fresh order with `deliver`, three times over, each delivered twice: one grant each. */
async function paysOnce(deliver: (event: unknown) => Promise<number>): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const order = await givenOrder(database);
    const event = paidEvent(order);
    assert.equal(await deliver(event), 200);
    const row = await finishedEvent(database, event.id);
    assert.equal(row.status, 'processed', row.last_error ?? '');
    assert.equal(await deliver(event), 200, 'a repeat delivery');
    assert.equal((await grantsOf(database, order.order_id)).length, 1);
    assert.equal((await quotaOf(database, order.account_id)).granted, order.credits);
  }
}

describe('the probe for a pooler in transaction mode', () => {
  test('tells transaction mode from session mode and a direct connection, every time', async () => {
    // Each probe on its own and all at once, so that PgBouncer's pools hold several idle server
    // connections by the later ones, as a running service's would.
    for (let attempt = 0; attempt < 3; attempt++) {
      assert.equal(await isTransactionPooled(database.url), false, 'direct');
      assert.equal(await isTransactionPooled(session.url(database.url)), false, 'session mode');
      assert.equal(await isTransactionPooled(transaction.url(database.url)), true, 'transaction mode');
    }
    // Ten at once hand servers back to each other between a probe's steps: only the pids of all
    // its rounds together show transaction mode every time.
    const together = await Promise.all(Array.from({ length: 10 }, () => isTransactionPooled(transaction.url(database.url))));
    assert.deepEqual(together, Array(10).fill(true));
  });

  test('with another client busy on the same pool still finds transaction mode', async () => {
    const busy = new pg.Client({ connectionString: transaction.url(database.url) });
    await busy.connect();
    try {
      const running = (async () => {
        for (let i = 0; i < 200; i++) await busy.query('select pg_backend_pid()');
      })();
      assert.equal(await isTransactionPooled(transaction.url(database.url)), true);
      await running;
    } finally {
      await busy.end();
    }
  });

  test('refuses a DATABASE_DIRECT_URL that is transaction-pooled too', async () => {
    const pooled = transaction.url(database.url);
    await assert.rejects(
      resolveDatabaseUrls(pooled, pooled),
      /^PoolerModeError: DATABASE_DIRECT_URL goes through a pooler in transaction mode .*must be a direct or session-mode URL/,
    );
  });
});

test('session mode: a paid order is fulfilled once, and new events arrive by LISTEN', async () => {
  const service = await startTestService(database, { databaseUrl: session.url(database.url), workerOptions: NEVER_POLL });
  try {
    // Set in the session: PgBouncer refuses them as startup parameters (src/db/database.ts).
    const { rows } = await sql<{ timeout: string }>`select current_setting('statement_timeout') as timeout`.execute(service.pools.intake.db);
    assert.deepEqual(rows, [{ timeout: '15s' }]);
    await paysOnce(async (event) => (await service.deliver(event)).status);
  } finally {
    await service.close();
  }
});

/** Runs one parameterised statement on `db`'s only connection twice, another client pinning the first server connection in between. */
async function acrossServerConnections(pooledUrl: string, options: { transactionPooled: boolean }): Promise<void> {
  const opened = openDatabase(pooledUrl, { maxConnections: 1, ...options });
  const pinning = new pg.Client({ connectionString: pooledUrl });
  await pinning.connect();
  try {
    const statement = sql<{ n: number }>`select ${1}::int as n`;
    await statement.execute(opened.db);
    await pinning.query('begin'); // PgBouncer hands it the server connection just released
    assert.deepEqual((await statement.execute(opened.db)).rows, [{ n: 1 }]);
  } finally {
    await pinning.end();
    await opened.close();
  }
}

describe('transaction mode', () => {
  test('the pooled connections prepare no statement, which the next server connection would lack', async () => {
    await acrossServerConnections(transaction.url(database.url), { transactionPooled: true });
    await assert.rejects(acrossServerConnections(transaction.url(database.url), { transactionPooled: false }), /prepared statement "k_.*" does not exist/);
  });

  test('without DATABASE_DIRECT_URL, start-up is refused with what is wrong and what to set', async () => {
    await assert.rejects(spawnService(transaction.url(database.url)), (error: Error) => {
      assert.match(error.message, /service exited with 1 before starting/);
      assert.match(
        error.message,
        /failed to start: DATABASE_URL goes through a pooler in transaction mode \(.*\); set DATABASE_DIRECT_URL to a direct or session-mode URL for the worker and migrations, or use session mode/,
      );
      assert.doesNotMatch(error.message, /\n\s+at /, 'no stack trace for a refusal that names its fix');
      return true;
    });
  });

  test('with DATABASE_DIRECT_URL, a paid order is fulfilled once, the worker on the direct URL', async () => {
    const child = await spawnService(transaction.url(database.url), { DATABASE_DIRECT_URL: database.url });
    children.push(child);
    assert.ok(child.logs.some((line) => String(line.msg).startsWith('DATABASE_URL goes through a pooler in transaction mode')));
    await paysOnce(async (event) => {
      const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
      return (await fetch(`${child.url}/webhooks/stripe`, { method: 'POST', body, headers })).status;
    });
    assert.equal((await fetch(`${child.url}/readyz`)).status, 200);
  });

  test("the intake's NOTIFY, sent through the pooler, wakes the worker that LISTENs on the direct URL", async () => {
    const urls = { url: transaction.url(database.url), sessionUrl: database.url, transactionPooled: true };
    const service = await startTestService(database, { databaseUrl: urls, workerOptions: NEVER_POLL });
    try {
      await paysOnce(async (event) => (await service.deliver(event)).status);
    } finally {
      await service.close();
    }
  });
});
