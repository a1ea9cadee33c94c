// The database identity watch: a database whose identity differs from the one recorded (a
// failover's new timeline, a restore into another cluster or database) gets a reconcile at once,
// queued once however many workers notice; an unchanged one gets none.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import pino from 'pino';
import { openDatabase } from '../../src/db/database.js';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { claimEvents } from '../../src/events/event-store.js';
import { createLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { checkDatabaseIdentity } from '../../src/maintenance/database-identity.js';
import { RECONCILE_TASK } from '../../src/maintenance/reconcile.js';
import { sweepTask } from '../../tasks/sweep_stale_events.js';
import { databaseForFile } from '../support/database.js';
import { finishedEvent, givenOrder, grantsOf, incomingEvent, paidEvent, quotaOf } from '../support/factories.js';
import { deleteJobs, fulfilmentJobs, holdJobs, lockedLongerThan } from '../support/jobs.js';
import { startTestService } from '../support/service.js';

const database = databaseForFile();
let stripe: OfflineStripe;
before(async () => {
  stripe = await startOfflineStripe();
});
after(() => stripe?.close());

/** A restore or a failover, as the service sees it: the row names another database than this one. */
async function restoredFromAnotherServer(): Promise<void> {
  await sql`update database_identity set system_identifier = system_identifier + 1, timeline_id = timeline_id + 1`.execute(database.db);
}

async function queuedReconciles(): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs where task_identifier = ${RECONCILE_TASK}`.execute(database.db);
  return rows[0]!.n;
}

/** No worker runs in these tests: the queued reconcile would wait for the next service start. */
async function clearQueue(): Promise<void> {
  await sql`select graphile_worker.complete_jobs(array(select id from graphile_worker.jobs where task_identifier = ${RECONCILE_TASK}))`.execute(database.db);
}

async function lastReconcileAt(): Promise<Date | undefined> {
  const { rows } = await sql<{ last_run_at: Date }>`select last_run_at from maintenance_runs where name = 'reconcile'`.execute(database.db);
  return rows[0]?.last_run_at;
}

test('the first check records the identity; an empty database is not reconciled, an unchanged one never', async () => {
  const first = await checkDatabaseIdentity(database.db, { reconcile: true });
  assert.equal(first.previous, null);
  assert.deepEqual([first.changed, first.reconcileQueued], [true, false]);
  assert.match(first.current.systemIdentifier ?? '', /^\d+$/);
  assert.ok((first.current.timelineId ?? 0) >= 1);
  const again = await checkDatabaseIdentity(database.db, { reconcile: true });
  assert.deepEqual([again.changed, again.reconcileQueued, again.previous], [false, false, first.current]);
  assert.equal(await queuedReconciles(), 0);
});

test('a changed identity queues one reconcile, from the newest, however many workers notice it at once', async () => {
  // A pass over a large window half read: what a failover lost is the newest, read first.
  await sql`insert into reconcile_cursors (list, resume_from) values ('snapshot', 'evt_halfway')`.execute(database.db);
  await restoredFromAnotherServer();
  const checks = await Promise.all(Array.from({ length: 4 }, () => checkDatabaseIdentity(database.db, { reconcile: true })));
  assert.equal(checks.filter((c) => c.changed).length, 1);
  assert.equal(checks.filter((c) => c.reconcileQueued).length, 1);
  assert.equal(await queuedReconciles(), 1);
  const { rows: cursors } = await sql`select * from reconcile_cursors`.execute(database.db);
  assert.deepEqual(cursors, [], 'the queued reconcile starts a new pass');
  assert.notDeepEqual(checks.find((c) => c.changed)!.previous, checks[0]!.current);
  // Without STRIPE_SECRET_KEY the change is recorded, and nothing is queued.
  await clearQueue();
  await restoredFromAnotherServer();
  assert.deepEqual((({ changed, reconcileQueued }) => ({ changed, reconcileQueued }))(await checkDatabaseIdentity(database.db, { reconcile: false })), {
    changed: true,
    reconcileQueued: false,
  });
  assert.equal(await queuedReconciles(), 0);
});

test('a database with events and no recorded identity is reconciled (the row itself may have been lost)', async () => {
  await claimEvents(database.db, [incomingEvent(paidEvent(await givenOrder(database)))], { maxAttempts: 10 });
  await sql`delete from database_identity`.execute(database.db);
  const check = await checkDatabaseIdentity(database.db, { reconcile: true });
  assert.deepEqual([check.previous, check.changed, check.reconcileQueued], [null, true, true]);
  await clearQueue();
});

test('a changed identity queues a sweep soon: jobs fetched from the old leader are reclaimed without waiting STALE_AFTER_SECONDS', async () => {
  await deleteJobs(database.db);
  const paid = paidEvent(await givenOrder(database));
  await claimEvents(database.db, [incomingEvent(paid)], { maxAttempts: 10 });
  const attempts = async () =>
    (await database.db.selectFrom('stripe_events').select('attempts').where('event_id', '=', paid.id).executeTakeFirstOrThrow()).attempts;
  // A worker fetched the event's job from the old leader and lost it with the leader's connections:
  // the job stays locked (graphile-worker frees it after 4 hours), the event's row is not.
  const deadWorker = await holdJobs(database, 1);
  try {
    await restoredFromAnotherServer();
    assert.equal((await checkDatabaseIdentity(database.db, { reconcile: false })).sweepQueued, true);
    // graphile-worker's public view hides payloads: its private table has them.
    const { rows } = await sql<{ payload: unknown; delay: number }>`
      select j.payload, extract(epoch from j.run_at - now())::float as delay
        from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = ${sweepTask.identifier}`.execute(database.db);
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0]!.payload, { staleAfterSeconds: 15 });
    assert.ok(rows[0]!.delay > 10 && rows[0]!.delay <= 15, `runs 15 s from now, not ${rows[0]!.delay}`);

    // The sweep task honours the job's staleness (1 s here, so the test need not wait 15); the
    // schedule's run, with STALE_AFTER_SECONDS, leaves the row for minutes more.
    await lockedLongerThan(database.db, deadWorker, 1_000);
    const sweep = sweepTask.task({
      db: database.db,
      logger: createLogger('silent'),
      metrics: new Metrics(database.db),
      config: { staleAfterMs: 300_000, maxAttempts: 10 },
    });
    const helpers = {} as Parameters<typeof sweep>[1]; // the sweep reads none
    await sweep({ _cron: { ts: new Date().toISOString(), backfilled: false } }, helpers);
    assert.equal(await attempts(), 0, 'the scheduled sweep left the event alone');
    await sweep({ staleAfterSeconds: 1 }, helpers);
    assert.equal(await attempts(), 1);
    // A fresh job carries the event; the dead worker's stays locked, carrying nothing any more.
    // (The previous test's event, whose job was deleted above, is reclaimed with it.)
    const jobs = await fulfilmentJobs(database.db);
    assert.deepEqual(
      jobs.map((job) => ({ locked: job.locked_at !== null, carries: job.event_ids.includes(paid.id) })),
      [
        { locked: true, carries: false },
        { locked: false, carries: true },
      ],
    );
  } finally {
    await deadWorker.release();
    await deleteJobs(database.db);
  }
});

test('a role that may not read the system identifier or timeline: the oid alone is compared, and a warning says a failover waits for RECONCILE_CRON', async (t) => {
  // As a provider may do: pg_control_system() revoked (in this database only) from a role that is
  // not a superuser, and the check run as that role.
  const role = `${database.name}_limited`;
  await sql`create role ${sql.id(role)}`.execute(database.db);
  t.after(async () => {
    await sql`drop owned by ${sql.id(role)}`.execute(database.db);
    await sql`drop role ${sql.id(role)}`.execute(database.db);
  });
  await sql`revoke execute on function pg_control_system() from public`.execute(database.db);
  t.after(() => sql`grant execute on function pg_control_system() to public`.execute(database.db));
  await sql`grant select, insert, update on database_identity to ${sql.id(role)}`.execute(database.db);
  await sql`grant select on stripe_events to ${sql.id(role)}`.execute(database.db);
  const limited = new URL(database.url);
  limited.searchParams.set('options', `-c role=${role}`);
  const asRole = openDatabase(limited.toString(), { maxConnections: 1 });
  t.after(() => asRole.close());
  const warnings: Array<{ msg: string }> = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as { msg: string }) });

  await sql`delete from database_identity`.execute(database.db);
  const check = await checkDatabaseIdentity(asRole.db, { reconcile: false, logger });
  assert.deepEqual([check.current.systemIdentifier, check.current.timelineId], [null, null]);
  const { rows } = await sql<{ oid: number }>`select oid from pg_database where datname = current_database()`.execute(database.db);
  assert.equal(check.current.databaseOid, rows[0]!.oid);
  assert.equal((await checkDatabaseIdentity(asRole.db, { reconcile: false, logger })).changed, false, 'the same oid is the same database');
  assert.deepEqual(
    warnings.map((line) => line.msg),
    ["the database's role may not read its system identifier or timeline: a failover is noticed only by RECONCILE_CRON's schedule"],
  );
  await sql`delete from database_identity`.execute(database.db);
});

test('the service started on a restored database reconciles at once, and a change while it runs is caught by the watch task', async () => {
  const orders = await Promise.all(Array.from({ length: 3 }, () => givenOrder(database)));
  const events = orders.map((order) => paidEvent(order));
  // The schedule stays off: only the identity starts a reconcile here.
  const env = { RECONCILE_CRON: 'off' };
  let service = await startTestService(database, { stripe, env });
  try {
    // Fulfilled before the "failover".
    assert.equal((await service.deliver(events[0]!)).status, 200);
    await finishedEvent(database, events[0]!.id);
    await service.close();
    // Acknowledged to the old database, lost with it: only Stripe's list still has them.
    for (const event of events) stripe.addEvent({ ...event }, { delivered: true });
    await restoredFromAnotherServer();

    service = await startTestService(database, { stripe, env });
    for (const event of events) assert.equal((await finishedEvent(database, event.id)).status, 'processed');
    for (const order of orders) {
      assert.equal((await grantsOf(database, order.order_id)).length, 1);
      assert.equal((await quotaOf(database, order.account_id)).granted, 40);
    }
    const check = await checkDatabaseIdentity(database.db, { reconcile: true });
    assert.equal(check.changed, false, 'the start-up check recorded the new identity');

    // A failover while the service runs: the next tick of the watch (queued here as its cron would).
    const later = paidEvent(await givenOrder(database));
    stripe.addEvent({ ...later }, { delivered: true });
    await restoredFromAnotherServer();
    await sql`select graphile_worker.add_job('check_database_identity')`.execute(database.db);
    // Only the watch queues a reconcile here, so the event's fulfilment is the watch's doing.
    assert.equal((await finishedEvent(database, later.id)).status, 'processed');
    assert.equal((await checkDatabaseIdentity(database.db, { reconcile: true })).changed, false, 'the watch recorded the new identity');
  } finally {
    await service.close();
  }
});

test('an unchanged identity at start-up starts no reconcile', async () => {
  const lastRun = await lastReconcileAt();
  assert.ok(lastRun, 'the previous test reconciled');
  const service = await startTestService(database, { stripe, env: { RECONCILE_CRON: 'off' } });
  try {
    // The start-up check is done once the service has started: had it queued a job, the job or its run would show.
    assert.equal(await queuedReconciles(), 0);
    assert.deepEqual(await lastReconcileAt(), lastRun);
  } finally {
    await service.close();
  }
});
