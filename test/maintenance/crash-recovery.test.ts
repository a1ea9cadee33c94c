// Real processes, real kills (docs/design.md, invariants 6, 7 and 10): a worker SIGKILLed in the
// middle of a fulfilment leaves its event 'processing' with no effect; the sweep hands it to
// another process, which fulfils it exactly once. And two processes taking one stream of duplicated
// deliveries, one of them killed and restarted, grant every order exactly once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { signDelivery } from '../../src/stripe/sample-events.js';
import { sweepStaleEvents } from '../../src/maintenance/sweep.js';
import { processesForFile } from '../support/child-service.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { WEBHOOK_SECRET } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

// The cron sweep is pushed out of the way: these tests run the sweep themselves, when they mean to.
const NO_CRON = { SWEEP_CRON: '0 0 1 1 *', STALE_AFTER_SECONDS: '1' };
const file = processesForFile(NO_CRON);

async function deliver(url: string, event: unknown): Promise<number> {
  const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
  try {
    return (await fetch(`${url}/webhooks/stripe`, { method: 'POST', body, headers })).status;
  } catch {
    return 0; // the process was killed mid-request: Stripe would retry
  }
}

const grantsFor = async (orderId: string) =>
  (await file.database.db.selectFrom('credit_grants').select('event_id').where('order_id', '=', orderId).execute()).length;

test('a worker killed mid-handler: its event is reclaimed by the sweep and fulfilled once elsewhere', async () => {
  const order = await givenOrder(file.database);
  const event = paidEvent(order);

  // Hold the order row so the first worker blocks inside its fulfilment transaction.
  const blocker = new pg.Client({ connectionString: file.database.url });
  await blocker.connect();
  try {
    await blocker.query('begin');
    await blocker.query('select 1 from orders where order_id = $1 for update', [order.order_id]);

    const first = await file.start();
    assert.equal(await deliver(first.url, event), 200);
    await waitFor('the worker to block on the order row', async () => {
      const { rows } = await blocker.query(
        "select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()",
      );
      return rows.length > 0;
    });
    first.process.kill('SIGKILL');
    assert.equal(await first.exited, 'SIGKILL');
  } finally {
    // Also when an assertion failed: a transaction left open would keep the file's database from
    // being dropped, and the run would hang instead of failing.
    await blocker.query('rollback').catch(() => {});
    await blocker.end();
  }

  // The kill rolled everything back: claimed, not fulfilled.
  const stuck = await file.database.db.selectFrom('stripe_events').selectAll().where('event_id', '=', event.id).executeTakeFirstOrThrow();
  assert.equal(stuck.status, 'processing');
  assert.equal(await grantsFor(order.order_id), 0);

  // graphile-worker would keep the dead worker's job locked for hours; the sweep does not wait.
  const second = await file.start({ ROLE: 'worker' });
  await waitFor('the sweep to reclaim the abandoned event', async () => {
    const result = await sweepStaleEvents(file.database.db, { staleAfterMs: 1_000, maxAttempts: 10 });
    return result.reclaimed === 1;
  });
  await waitFor('the event to be fulfilled', async () => {
    const row = await file.database.db.selectFrom('stripe_events').select('status').where('event_id', '=', event.id).executeTakeFirstOrThrow();
    return row.status === 'processed';
  });
  assert.equal(await grantsFor(order.order_id), 1);
  second.process.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});

test('two processes, duplicated deliveries, one killed and restarted: every order granted exactly once', async () => {
  const orders = await Promise.all(Array.from({ length: 60 }, () => givenOrder(file.database)));
  // Each payment: its event delivered to both processes, plus a second Event object for the
  // same session delivered to either (docs/design.md, invariants 3 and 4).
  const events = orders.flatMap((order) => {
    const first = paidEvent(order, { sessionId: `cs_test_${order.order_id}` });
    const second = paidEvent(order, { sessionId: `cs_test_${order.order_id}` });
    return [first, first, second];
  });

  let a = await file.start();
  const b = await file.start();
  const statuses: number[] = [];
  for (let i = 0; i < events.length; i += 6) {
    if (i === 90) {
      a.process.kill('SIGKILL');
      await a.exited;
      a = await file.start();
    }
    const batch = events.slice(i, i + 6);
    statuses.push(...(await Promise.all(batch.map((e, j) => deliver((i + j) % 2 ? a.url : b.url, e)))));
  }
  // Stripe retries what was not acknowledged; here that is nothing, or a request cut by the kill.
  const unacknowledged = events.filter((_, i) => statuses[i] !== 200);
  for (const event of unacknowledged) assert.equal(await deliver(b.url, event), 200);

  await waitFor(
    'no event left processing',
    async () => {
      await sweepStaleEvents(file.database.db, { staleAfterMs: 1_000, maxAttempts: 10 });
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events where status = 'processing'`.execute(file.database.db);
      return rows[0]!.n === 0;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  const { rows } = await sql<{ orders: number; grants: number; paid: number; credits: number }>`
    select (select count(distinct order_id)::int from credit_grants where order_id = any(${orders.map((o) => o.order_id)})) as orders,
           (select count(*)::int from credit_grants where order_id = any(${orders.map((o) => o.order_id)})) as grants,
           (select count(*)::int from orders where status = 'paid' and order_id = any(${orders.map((o) => o.order_id)})) as paid,
           (select coalesce(sum(granted), 0)::int from account_credits where account_id = any(${orders.map((o) => o.account_id)})) as credits`.execute(
    file.database.db,
  );
  assert.deepEqual(rows[0], { orders: 60, grants: 60, paid: 60, credits: 60 * 40 });
  const { rows: outcomes } = await sql<{ status: string; n: number }>`
    select status, count(*)::int as n from stripe_events group by status order by status`.execute(file.database.db);
  assert.deepEqual(outcomes, [
    { status: 'duplicate', n: 60 },
    { status: 'processed', n: 60 + 1 }, // + the first test's event
  ]);
});
