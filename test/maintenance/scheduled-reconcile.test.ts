// The reconcile the worker runs on its own (task reconcile_events): bounded by its settings,
// saying when the bound cut it short, reading on where the last run stopped until its window is
// read whole, and claiming what Stripe lists and the inbox lacks so that each is fulfilled once,
// never doubling what was already fulfilled.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { JobHelpers } from 'graphile-worker';
import { sql } from 'kysely';
import pino from 'pino';
import { reconcileTask } from '../../tasks/reconcile_events.js';
import { reconcileEvents, RECONCILE_TASK } from '../../src/maintenance/reconcile.js';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { CallRate } from '../../src/stripe/call-rate.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { sampleEvent, thinNotification } from '../../src/stripe/sample-events.js';
import { databaseForFile, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, grantsOf, paidEvent, quotaOf } from '../support/factories.js';
import { ADMIN_TOKEN, serviceForFile, STRIPE_SECRET_KEY, testConfig } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

// The schedule stays off: a run is queued by the test, never by the clock crossing :17.
const file = serviceForFile({ env: { RECONCILE_CRON: 'off' } });

test('the crontab line follows RECONCILE_CRON, and there is none when off or without STRIPE_SECRET_KEY', () => {
  assert.equal(reconcileTask.crontab(testConfig()), `17 * * * * ${RECONCILE_TASK} ?max=1`);
  assert.equal(reconcileTask.crontab(testConfig({ RECONCILE_CRON: '*/5 * * * *' })), `*/5 * * * * ${RECONCILE_TASK} ?max=1`);
  assert.equal(reconcileTask.crontab(testConfig({ RECONCILE_CRON: 'off' })), '');
  assert.equal(reconcileTask.crontab({ ...testConfig(), stripeSecretKey: undefined }), '');
  assert.throws(() => testConfig({ RECONCILE_CRON: 'hourly' }), /RECONCILE_CRON must have five crontab fields, or be off/);
  assert.throws(() => testConfig({ RECONCILE_WINDOW_HOURS: '721' }), /RECONCILE_WINDOW_HOURS/);
  assert.equal(testConfig().reconcileWindowMs, 72 * 3_600_000);
});

test.describe('a run bounded by its list calls', () => {
  const database = databaseForFile();
  let stripe: OfflineStripe;
  before(async () => {
    stripe = await startOfflineStripe();
  });
  after(() => stripe?.close());

  test('reports its calls and that it was cut short, and claims only the pages it read', async () => {
    // 250 events, older first: the list is newest first, so two pages are the newest 200.
    const now = Math.floor(Date.now() / 1000);
    const events = Array.from({ length: 250 }, (_, i) =>
      sampleEvent('customer.created', { id: `cus_test_${i}`, object: 'customer' }, { created: now - 250 + i }),
    );
    for (const event of events) stripe.addEvent({ ...event });
    const client = createStripeClient(STRIPE_SECRET_KEY, stripe.url, { timeoutMs: 5_000 });
    const options = { since: new Date((now - 3_600) * 1000), maxAttempts: 10, lists: 'snapshot' as const };

    const bounded = await reconcileEvents(database.db, client, { ...options, maxCalls: 2, callRate: new CallRate(100) });
    assert.deepEqual(
      { listed: bounded.listed, missing: bounded.missing, claimed: bounded.claimed, calls: bounded.calls, truncated: bounded.truncated },
      { listed: 200, missing: 200, claimed: 200, calls: 2, truncated: true },
    );
    assert.deepEqual(new Set(bounded.event_ids), new Set(events.slice(50).map((e) => e.id)));
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events`.execute(database.db);
    assert.equal(rows[0]!.n, 200, 'nothing of the page not read is claimed');
    assert.deepEqual(await lastRun(database), { listed: 200, missing: 200, claimed: 200, calls: 2, truncated: true, resumed: false });

    // Enough calls: three pages (100, 100, 50), the last one's 50 claimed now.
    const whole = await reconcileEvents(database.db, client, { ...options, maxCalls: 3 });
    assert.deepEqual(
      { listed: whole.listed, missing: whole.missing, claimed: whole.claimed, calls: whole.calls, truncated: whole.truncated },
      { listed: 250, missing: 50, claimed: 50, calls: 3, truncated: false },
    );
    // Both lists: the empty v2 list costs one call more.
    const both = await reconcileEvents(database.db, client, { ...options, lists: 'both', dryRun: true });
    assert.deepEqual({ calls: both.calls, truncated: both.truncated, missing: both.missing }, { calls: 4, truncated: false, missing: 0 });
  });
});

test.describe('a window holding more events than a run may read', () => {
  const database = databaseForFile();
  let stripe: OfflineStripe;
  before(async () => {
    stripe = await startOfflineStripe();
  });
  after(() => stripe?.close());

  test('is read whole over several runs, each going on where the last stopped, and then a new pass starts from the newest', async () => {
    // 550 snapshot events (6 pages) and 120 thin ones (2 pages: the stand-in's next_page_url
    // carries no limit, so its pages after the first hold 20), one a second, all in the window;
    // 3 calls a run: 8 pages take three runs, where each run used to read the newest 3 again.
    const now = Math.floor(Date.now() / 1000);
    const snapshot = Array.from({ length: 550 }, (_, i) =>
      sampleEvent('customer.created', { id: `cus_window_${i}`, object: 'customer' }, { created: now - 1_000 + i }),
    );
    for (const event of snapshot) stripe.addEvent({ ...event });
    const thin = Array.from({ length: 120 }, (_, i) => ({
      ...thinNotification(snapshot[i]!, { withSnapshot: false }),
      created: new Date((now - 2_000 + i) * 1000).toISOString(),
    }));
    for (const notification of thin) stripe.addThinEvent({ ...notification });
    const lines: Array<{ msg: string; level: number }> = [];
    const task = reconcileTask.task({
      db: database.db,
      stripe: createStripeClient(STRIPE_SECRET_KEY, stripe.url, { timeoutMs: 5_000 }),
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; level: number }) }),
      metrics: { reconciledEvents: { inc: () => {} } } as never,
      config: testConfig({ RECONCILE_MAX_CALLS: '3', RECONCILE_CALLS_PER_SECOND: '100' }),
    });
    const run = async () => {
      lines.length = 0;
      await task({}, {} as JobHelpers);
      const { missing, claimed, calls, truncated, resumed } = (await lastRun(database)) as Record<string, unknown>;
      return { missing, claimed, calls, truncated, resumed, said: lines.map((line) => line.msg) };
    };
    const claimedSoFar = async () => (await sql<{ n: number }>`select count(*)::int as n from stripe_events`.execute(database.db)).rows[0]!.n;

    const stoppedAt =
      'reconcile stopped after 3 Stripe list calls, before the start of its window: the next run reads on from there; to read it in one run, raise RECONCILE_MAX_CALLS (or lower RECONCILE_WINDOW_HOURS)';
    assert.deepEqual(await run(), {
      missing: 300,
      claimed: 300,
      calls: 3,
      truncated: true,
      resumed: false,
      said: ['reconcile claimed events Stripe has and we had lost', stoppedAt],
    });
    assert.deepEqual(await run(), {
      missing: 250,
      claimed: 250,
      calls: 3,
      truncated: true,
      resumed: true,
      said: ['reconcile claimed events Stripe has and we had lost', stoppedAt],
    });
    assert.equal(await claimedSoFar(), 550, 'every snapshot event, the oldest included');
    assert.deepEqual(await run(), {
      missing: 120,
      claimed: 120,
      calls: 2,
      truncated: false,
      resumed: true,
      said: [
        'reconcile claimed events Stripe has and we had lost',
        'reconcile read on to the start of its window: a pass over it, started by an earlier run, is complete',
      ],
    });
    assert.equal(await claimedSoFar(), 670, 'every event in the window, of both lists');
    // The pass is over: the next run reads the newest again, for what arrived meanwhile.
    assert.deepEqual(await run(), { missing: 0, claimed: 0, calls: 3, truncated: true, resumed: false, said: [stoppedAt] });

    // A cursor Stripe no longer takes (a page token that expired, an event older than 30 days):
    // that list is read from the newest, and the run says so.
    await sql`delete from reconcile_cursors`.execute(database.db);
    await sql`insert into reconcile_cursors (list, resume_from) values ('snapshot', null), ('thin', '/v2/core/events?page=expired')`.execute(database.db);
    assert.deepEqual(await run(), {
      missing: 0,
      claimed: 0,
      calls: 3,
      truncated: false,
      resumed: true,
      said: [
        "Stripe refused the thin list's cursor where the last reconcile stopped: reading it from the newest",
        'reconcile read on to the start of its window: a pass over it, started by an earlier run, is complete',
      ],
    });
    assert.equal((await sql<{ n: number }>`select count(*)::int as n from reconcile_cursors`.execute(database.db)).rows[0]!.n, 0, 'the pass is over');
  });
});

test('the task claims what Stripe lists and the inbox lacks; each is fulfilled once, nothing fulfilled is doubled', async () => {
  const { service, database } = file;
  const orders = await Promise.all(Array.from({ length: 4 }, () => givenOrder(database)));
  const events = orders.map((order) => paidEvent(order));
  // The first was delivered and fulfilled; the others got their 2xx from a database that is gone.
  assert.equal((await service.deliver(events[0]!)).status, 200);
  await finishedEvent(database, events[0]!.id);
  for (const event of events) service.stripe.addEvent({ ...event }, { delivered: true });
  // A second Event object for the first order's payment, never received: its grant is the order's.
  const twin = paidEvent(orders[0]!);
  service.stripe.addEvent({ ...twin });

  const started = new Date();
  await sql`select graphile_worker.add_job(${RECONCILE_TASK})`.execute(database.db);
  const run = await waitFor('the reconcile run to be recorded', async () => {
    const { rows } = await sql<{ last_run_at: Date; last_result: Record<string, unknown> }>`
      select last_run_at, last_result from maintenance_runs where name = 'reconcile'`.execute(database.db);
    return rows[0] && rows[0].last_run_at >= started && rows[0].last_result;
  });
  assert.deepEqual(
    { missing: run.missing, claimed: run.claimed, calls: run.calls, truncated: run.truncated },
    { missing: 4, claimed: 4, calls: 2, truncated: false },
  );

  for (const event of events) assert.equal((await finishedEvent(database, event.id)).status, 'processed');
  assert.equal((await finishedEvent(database, twin.id)).status, 'duplicate');
  for (const order of orders) {
    assert.equal((await grantsOf(database, order.order_id)).length, 1);
    assert.equal((await quotaOf(database, order.account_id)).granted, 40);
  }
  const metrics = await (await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  assert.match(metrics, /^stripe_inbox_reconciled_events_total 4$/m);
});

async function lastRun(database: TestDatabase): Promise<unknown> {
  const { rows } = await sql<{ last_result: unknown }>`select last_result from maintenance_runs where name = 'reconcile'`.execute(database.db);
  return rows[0]?.last_result;
}
