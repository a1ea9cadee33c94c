// Finishing a batch must cost the same with ten events waiting or ten thousand: a backlog (after an
// outage, a burst, a deploy) is exactly when fulfilment has to keep up. The planner's statistics
// usually saw a quiet inbox, with few 'processing' rows; the plan the finish statement gets from
// them must still read only the batch's own rows. Plans are read from auto_explain, on the real
// statement that markFinished sends. The finished history (HISTORY) is large enough that reading
// the whole table is not the cheap plan it is for a table of a few pages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { markFinished } from '../../src/events/event-store.js';
import { openExplainedDatabase } from '../../scripts/dev/explained-database.js';
import { databaseForFile } from '../support/database.js';
import { rowsRead } from '../support/plans.js';

const database = databaseForFile();

const HISTORY = 20_000;
const BACKLOG = 3000;
const BATCH = 30;

test('finishing a batch reads its own rows, however many events wait behind it', async () => {
  const { db } = database;
  // Statistics taken while the inbox was quiet (a few events waiting), and kept so: autovacuum
  // would analyze the backlog.
  await sql`alter table stripe_events set (autovacuum_enabled = false)`.execute(db);
  await sql`
    insert into stripe_events (event_id, type, livemode, stripe_created_at, payload, status, finished_at)
    select 'evt_done_' || g, 'checkout.session.completed', false, now(), '{}', 'processed', now()
    from generate_series(1, ${HISTORY}) g`.execute(db);
  await sql`
    insert into stripe_events (event_id, type, livemode, stripe_created_at, payload)
    select 'evt_quiet_' || g, 'checkout.session.completed', false, now(), '{}'
    from generate_series(1, 10) g`.execute(db);
  await sql`analyze stripe_events`.execute(db);
  await sql`
    insert into stripe_events (event_id, type, livemode, stripe_created_at, payload)
    select 'evt_waiting_' || g, 'checkout.session.completed', false, now(), '{}'
    from generate_series(1, ${BACKLOG}) g`.execute(db);

  // Both ways Postgres plans a prepared statement: for this call's values, and once for any values
  // (what it settles on after a few calls, when it judges that no dearer).
  const explained = openExplainedDatabase(database.url);
  try {
    for (const [i, planCacheMode] of ['force_custom_plan', 'force_generic_plan'].entries()) {
      await sql`select set_config('plan_cache_mode', ${planCacheMode}, false)`.execute(explained.db);
      const batch = Array.from({ length: BATCH }, (_, n) => `evt_waiting_${i * BATCH + n + 1}`);
      await explained.db.transaction().execute((tx) =>
        markFinished(
          tx,
          batch.map((eventId) => ({ eventId, outcome: { status: 'processed' } })),
        ),
      );
      assert.equal(explained.problem(), undefined);
      const plan = explained.plans.findLast((logged) => /update stripe_events e set/.test(logged));
      assert.ok(plan, 'the finish statement was explained');
      const read = rowsRead(plan, 'stripe_events');
      assert.ok(read > 0 && read <= BATCH, `${planCacheMode}: the finish statement read ${read} rows of stripe_events for a batch of ${BATCH}:\n${plan}`);
    }
  } finally {
    await explained.close();
  }

  const counts = await db
    .selectFrom('stripe_events')
    .select(['status', sql<number>`count(*)::int`.as('n')])
    .where('event_id', 'like', 'evt_waiting_%')
    .groupBy('status')
    .execute();
  assert.deepEqual(Object.fromEntries(counts.map((c) => [c.status, c.n])), { processed: 2 * BATCH, processing: BACKLOG - 2 * BATCH });
});
