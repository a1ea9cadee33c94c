// The status summary is read again and again (the dashboard every 5 s, each metrics scrape), so it
// must not cost a read of the whole history: 'processing' and 'failed' are counted on every read
// from their own rows, and a large history of finished events is counted at most once per
// HISTORY_RECOUNT_MS. A small history is counted on every read. Each read is one snapshot.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql, type KyselyPlugin } from 'kysely';
import { openExplainedDatabase } from '../../scripts/dev/explained-database.js';
import { HISTORY_COUNTED_LIVE, HISTORY_RECOUNT_MS, inboxStatusReader } from '../../src/events/read-model.js';
import { databaseForFile } from '../support/database.js';
import { rowsRead } from '../support/plans.js';

const database = databaseForFile();

async function addEvents(prefix: string, status: 'processing' | 'processed' | 'failed', count: number): Promise<void> {
  await sql`
    insert into stripe_events (event_id, type, livemode, stripe_created_at, payload, status, finished_at, last_error)
    select ${prefix} || g, 'checkout.session.completed', false, now(), '{}', ${status},
           case when ${status} <> 'processing' then now() end, case when ${status} = 'failed' then 'boom' end
    from generate_series(1, ${count}::int) g`.execute(database.db);
}

test('a small history is counted on every read', async () => {
  const status = inboxStatusReader(database.db);
  const before = (await status()).counts;
  await addEvents('evt_small_done_', 'processed', 2);
  await addEvents('evt_small_failed_', 'failed', 1);
  const after = (await status()).counts;
  assert.equal(after.processed, before.processed + 2);
  assert.equal(after.failed, before.failed + 1);
});

test('one read is one snapshot: an event that finishes while the status is read is counted once', async () => {
  await addEvents('evt_snapshot_', 'processing', 1);
  // After the read's first statement, the event finishes on another connection.
  let finished: Promise<unknown> | undefined;
  const finishDuringRead: KyselyPlugin = {
    transformQuery: ({ node }) => node,
    async transformResult({ result }) {
      await (finished ??= sql`update stripe_events set status = 'processed', finished_at = now() where event_id = 'evt_snapshot_1'`.execute(database.db));
      return result;
    },
  };
  const { counts } = await inboxStatusReader(database.db.withPlugin(finishDuringRead))();
  assert.ok(finished, 'the event finished during the read');
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events`.execute(database.db);
  const counted = Object.values(counts).reduce((a, b) => a + b, 0);
  assert.equal(counted, rows[0]!.n, `every event counted once: ${JSON.stringify(counts)}`);
});

test('a large history is counted once per HISTORY_RECOUNT_MS; processing and failed on every read, from their own rows', async () => {
  let now = Date.parse('2026-12-01T00:00:00Z');
  const status = inboxStatusReader(database.db, () => now);
  await addEvents('evt_history_', 'processed', HISTORY_COUNTED_LIVE);
  await sql`analyze stripe_events`.execute(database.db);
  const first = await status();
  assert.ok(first.counts.processed >= HISTORY_COUNTED_LIVE);

  now += HISTORY_RECOUNT_MS - 1;
  await addEvents('evt_later_done_', 'processed', 3);
  await addEvents('evt_later_waiting_', 'processing', 2);
  await addEvents('evt_later_failed_', 'failed', 1);
  const second = await status();
  assert.equal(second.counts.processed, first.counts.processed, 'the history count is reused');
  assert.equal(second.history_counted_at, first.history_counted_at);
  assert.equal(second.counts.processing, first.counts.processing + 2);
  assert.equal(second.counts.failed, first.counts.failed + 1);
  assert.ok(second.oldest_processing_age_seconds !== null);

  now += 1;
  const third = await status();
  assert.equal(third.counts.processed, first.counts.processed + 3, 'recounted once HISTORY_RECOUNT_MS passed');
  assert.equal(third.history_counted_at, new Date(now).toISOString());

  // What every read costs: the live counts read the waiting and failed rows, not the history.
  // Two reads that find the history count due at once (a new reader has none) share one count.
  const explained = openExplainedDatabase(database.url);
  try {
    const reader = inboxStatusReader(explained.db, () => now);
    await Promise.all([reader(), reader()]);
    assert.equal(explained.problem(), undefined);
    assert.equal(explained.plans.filter((logged) => /group by "status"/.test(logged)).length, 1, 'one history count for both reads');
    const plan = explained.plans.find((logged) => /status = 'failed'/.test(logged));
    assert.ok(plan, 'the live counts were explained');
    const read = rowsRead(plan, 'stripe_events');
    // Each waiting row is read twice (its count, the oldest's age), each failed row once.
    const live = third.counts.processing + third.counts.failed;
    assert.ok(read >= live && read <= 2 * live, `the live counts read ${read} rows of stripe_events for ${live} waiting and failed events:\n${plan}`);
  } finally {
    await explained.close();
  }
});
