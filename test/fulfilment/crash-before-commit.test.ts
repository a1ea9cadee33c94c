// A worker that dies between claiming an event and committing its fulfilment leaves the event
// 'processing' with no effect, and the retry fulfils it exactly once (docs/design.md,
// invariants 2 and 6). The worker is stopped mid-transaction by a row lock this test holds, then
// its backend is terminated: to Postgres a killed connection is exactly a crashed worker.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';

import { eventRow, finishedEvent, givenOrder, grantsOf, orderRow, paidEvent } from '../support/factories.js';
import { jobOf } from '../support/jobs.js';
import { serviceForFile } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

// graphile-worker retries after e^1 ≈ 2.7 s, found by a poll every 2 s (src/worker/runners.ts).
const RETRY_TIMEOUT_MS = 20_000;

const file = serviceForFile();

/** Opens a transaction on its own connection holding `lockQuery`'s row locks until released. */
async function holdLock(lockQuery: string, params: unknown[]): Promise<{ pid: number; release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: file.database.url, application_name: 'test-lock-holder' });
  await client.connect();
  let pid: number;
  try {
    await client.query('begin');
    const { rowCount } = await client.query(lockQuery, params);
    assert.equal(rowCount, 1, 'the lock holder locked its row');
    pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  } catch (error) {
    await client.end();
    throw error;
  }
  return {
    pid,
    async release() {
      await client.query('rollback');
      await client.end();
    },
  };
}

/** The backend that waits for the lock `lock` holds: the worker, stopped by it. */
async function blockedWorker(lock: { pid: number }): Promise<{ pid: number; query: string }> {
  return waitFor('the worker to block on the held lock', async () => {
    const { rows } = await sql<{ pid: number; query: string }>`
      select pid, query from pg_stat_activity
      where datname = current_database() and ${lock.pid}::int = any(pg_blocking_pids(pid))`.execute(file.database.db);
    return rows.length === 1 && rows[0];
  });
}

async function crash(pid: number): Promise<void> {
  const { rows } = await sql<{ killed: boolean }>`select pg_terminate_backend(${pid}::int) as killed`.execute(file.database.db);
  assert.equal(rows[0]?.killed, true);
}

/** graphile-worker has recorded the crashed attempt and scheduled its retry. */
async function crashedAttemptRecorded(eventId: string): Promise<void> {
  await waitFor('graphile-worker to fail the crashed job back to the queue', async () => {
    const job = await jobOf(file.database.db, eventId);
    return job && job.last_error !== null && job.locked_at === null;
  });
}

async function assertNothingFulfilled(eventId: string, order: { order_id: string; account_id: string }): Promise<void> {
  assert.equal((await eventRow(file.database, eventId)).status, 'processing');
  assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  const stored = await orderRow(file.database, order.order_id);
  assert.equal(stored.status, 'pending');
  assert.equal(stored.paid_at, null);
  const reply = await file.service.call('GET', `/api/accounts/${order.account_id}/quota`);
  assert.equal(reply.body.granted, 0);
}

async function assertGrantedOnce(eventId: string, order: { order_id: string; account_id: string; credits: number }): Promise<void> {
  assert.equal((await finishedEvent(file.database, eventId, { timeoutMs: RETRY_TIMEOUT_MS })).status, 'processed');
  assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: eventId, credits: order.credits }]);
  assert.equal((await orderRow(file.database, order.order_id)).status, 'paid');
  const reply = await file.service.call('GET', `/api/accounts/${order.account_id}/quota`);
  assert.deepEqual(reply.body, { account_id: order.account_id, granted: order.credits, used: 0, remaining: order.credits });
}

describe('a worker killed between claim and commit', () => {
  test('while waiting for the order: the event stays processing with no grant, and the retry grants once', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    const lock = await holdLock('select order_id from orders where order_id = $1 for update', [order.order_id]);
    try {
      assert.equal((await file.service.deliver(event)).status, 200);
      const worker = await blockedWorker(lock);
      assert.match(
        worker.query,
        /locked_orders as materialized \(\s+select [^)]+ from orders\s+(--[^\n]*\s+)?where order_id in \([\s\S]+?\)\s+order by order_id\s+for update/,
      );
      await crash(worker.pid);
      await crashedAttemptRecorded(event.id);
      await assertNothingFulfilled(event.id, order);
    } finally {
      await lock.release();
    }
    await assertGrantedOnce(event.id, order);
  });

  test('after inserting the grant, before the balance and the status flip: the grant is rolled back with it', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    // The balance row is written after the grant row, by the same statement (order-payment.ts):
    // holding it stops the worker with its credit_grants insert done but not committed.
    await file.database.db.insertInto('account_credits').values({ account_id: order.account_id }).execute();
    const lock = await holdLock('select account_id from account_credits where account_id = $1 for update', [order.account_id]);
    try {
      assert.equal((await file.service.deliver(event)).status, 200);
      const worker = await blockedWorker(lock);
      assert.match(worker.query, /grant_rows as \(\s+insert into credit_grants/, 'blocked in the statement that grants, and adds to the balance');
      // Its uncommitted grant row is there: the worker holds a write lock on credit_grants.
      const { rows } = await sql<{ mode: string }>`
        select mode from pg_locks where pid = ${worker.pid}::int and relation = 'credit_grants'::regclass`.execute(file.database.db);
      assert.ok(
        rows.some((r) => r.mode === 'RowExclusiveLock'),
        'the grant was inserted before the crash',
      );
      await crash(worker.pid);
      await crashedAttemptRecorded(event.id);
      await assertNothingFulfilled(event.id, order);
    } finally {
      await lock.release();
    }
    await assertGrantedOnce(event.id, order);
  });
});
