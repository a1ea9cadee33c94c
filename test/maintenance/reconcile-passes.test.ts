// A long outage, reconciled whole by the scheduled runs: each run reads on where the last stopped
// (reconcile_cursors, in the database, so a restart loses nothing), pages whose boundaries fall
// inside a second of many events lose none of them (Stripe pages by event id, starting_after, not
// by time), and two runs at once never leave a pass with a part of its window unread.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { JobHelpers } from 'graphile-worker';
import { sql } from 'kysely';
import pino from 'pino';
import type Stripe from 'stripe';
import { reconcileTask } from '../../tasks/reconcile_events.js';
import { reconcileEvents } from '../../src/maintenance/reconcile.js';
import { forgetCursors } from '../../src/maintenance/reconcile-cursors.js';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { sampleEvent } from '../../src/stripe/sample-events.js';
import { databaseForFile, type TestDatabase } from '../support/database.js';
import { STRIPE_SECRET_KEY, testConfig } from '../support/service.js';

/** A database and a Stripe stand-in of the describe block's own: each test's window holds only its events. */
interface World {
  database: TestDatabase;
  addEvents: (prefix: string, count: number, from: number) => string[];
  claimedIds: () => Promise<Set<string>>;
  client: () => Stripe;
}

function ownWorld(): World {
  const database = databaseForFile();
  let stripe: OfflineStripe | undefined;
  before(async () => {
    stripe = await startOfflineStripe();
  });
  after(() => stripe?.close());
  return {
    database,
    addEvents: (prefix, count, from) => addEventsTo(stripe!, prefix, count, from),
    claimedIds: async () => new Set((await database.db.selectFrom('stripe_events').select('event_id').execute()).map((r) => r.event_id)),
    client: () => createStripeClient(STRIPE_SECRET_KEY, stripe!.url, { timeoutMs: 5_000 }),
  };
}

/** `count` customer.created events, 40 to each second from `from` on: a page of 100 ends inside a second. */
function addEventsTo(stripe: OfflineStripe, prefix: string, count: number, from: number): string[] {
  const events = Array.from({ length: count }, (_, i) =>
    sampleEvent('customer.created', { id: `cus_${prefix}_${i}`, object: 'customer' }, { created: from + Math.floor(i / 40) }),
  );
  for (const event of events) stripe.addEvent({ ...event });
  return events.map((e) => e.id);
}

describe('an outage longer than a run', () => {
  const { database, addEvents, claimedIds, client } = ownWorld();
  test('12,000 events of an outage, 40 to a second, are claimed over three scheduled runs, each after a restart, each once', async () => {
    const ids = addEvents('outage', 12_000, Math.floor(Date.now() / 1000) - 3_600);
    const runs: unknown[] = [];
    for (let run = 0; run < 5; run++) {
      // A task built anew each run, as a restarted worker builds it: where the last run stopped is
      // only in the database.
      const task = reconcileTask.task({
        db: database.db,
        stripe: client(),
        logger: pino({ level: 'silent' }),
        metrics: { reconciledEvents: { inc: () => {} } } as never,
        config: testConfig({ RECONCILE_CALLS_PER_SECOND: '100' }),
      });
      await task({}, {} as JobHelpers);
      const { rows } = await sql<{ last_result: { claimed: number; calls: number; truncated: boolean; resumed: boolean } }>`
        select last_result from maintenance_runs where name = 'reconcile'`.execute(database.db);
      const { claimed, calls, truncated, resumed } = rows[0]!.last_result;
      runs.push({ claimed, calls, truncated, resumed });
      if (!truncated) break;
    }
    // RECONCILE_MAX_CALLS' default 50: 5,000 a run; the last reads 20 pages and the empty v2 list.
    assert.deepEqual(runs, [
      { claimed: 5_000, calls: 50, truncated: true, resumed: false },
      { claimed: 5_000, calls: 50, truncated: true, resumed: true },
      { claimed: 2_000, calls: 21, truncated: false, resumed: true },
    ]);
    assert.deepEqual(await claimedIds(), new Set(ids));
  });
});

describe('two runs at once', () => {
  const { database, addEvents, claimedIds, client } = ownWorld();
  test('a run from cursors another run moved meanwhile leaves them as that one did: the pass then reads every event', async () => {
    const now = Math.floor(Date.now() / 1000);
    const older = addEvents('older', 600, now - 3_000);
    const stripe = client();
    const run = (through: Stripe = stripe) =>
      reconcileEvents(database.db, through, { since: new Date((now - 3_600) * 1000), maxAttempts: 10, lists: 'snapshot', maxCalls: 2, resume: true });
    await run();

    // A run (a tick) reads the cursors, then is slow to list.
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let started = () => {};
    const listing = new Promise<void>((resolve) => (started = resolve));
    const slow = { events: { list: async (params: Stripe.EventListParams) => (started(), await released, stripe.events.list(params)) } } as unknown as Stripe;
    const tick = run(slow);
    await listing;
    // Meanwhile 300 events more, and a failover: its run clears the cursors and reads the newest 200.
    const newer = addEvents('newer', 300, now - 100);
    await forgetCursors(database.db);
    await run();
    release();
    await tick;

    const passes: boolean[] = [];
    for (let more = true; more && passes.length < 10;) passes.push((more = (await run()).truncated));
    assert.equal(passes.at(-1), false, 'the pass is complete');
    assert.deepEqual(await claimedIds(), new Set([...older, ...newer]), 'every event of the window, the newer ones past the failover run’s 200 too');
  });
});

describe('the manual run', () => {
  const { database, addEvents, client } = ownWorld();
  test('npm run reconcile (no resume) reads from the newest and leaves the scheduled runs’ cursors as they are', async () => {
    const now = Math.floor(Date.now() / 1000);
    const ids = addEvents('manual', 150, now - 600);
    await sql`insert into reconcile_cursors (list, resume_from) values ('snapshot', 'evt_somewhere'), ('thin', null)`.execute(database.db);
    const stripe = client();
    const result = await reconcileEvents(database.db, stripe, { since: new Date((now - 700) * 1000), maxAttempts: 10, lists: 'snapshot', maxCalls: 1 });
    assert.deepEqual([result.calls, result.claimed, result.resumed], [1, 100, false], 'the newest page, whatever cursor the schedule left');
    assert.ok(result.event_ids.every((id) => ids.includes(id)));
    const { rows } = await sql`select list, resume_from from reconcile_cursors order by list`.execute(database.db);
    assert.deepEqual(rows, [
      { list: 'snapshot', resume_from: 'evt_somewhere' },
      { list: 'thin', resume_from: null },
    ]);
  });
});
