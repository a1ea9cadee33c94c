// Retention deletes only finished events past the window, never work in flight or dead letters,
// never under 31 days; and a pruned event delivered again still grants nothing (docs/design.md,
// invariant 5). The API's Idempotency-Keys past the window go too, except those that number an
// order's refunds.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { claimEvents } from '../../src/events/event-store.js';
import { createOutbox } from '../../src/notifications/outbox.js';
import { pruneEvents } from '../../src/maintenance/prune.js';
import { businessModules } from '../../src/modules/index.js';
import { databaseForFile } from '../support/database.js';
import { finishedEvent, givenOrder, grantsOf, incomingEvent, paidEvent, paidOrder, quotaOf } from '../support/factories.js';
import { deleteJobs, fulfilmentJobs, holdJobs, jobOf } from '../support/jobs.js';
import { startTestService } from '../support/service.js';
import { exampleObject, sampleEvent } from '../../src/stripe/sample-events.js';

const database = databaseForFile();
beforeEach(async () => {
  await sql`truncate stripe_events, maintenance_runs`.execute(database.db);
});

/** Inserts `count` events in `status` that finished `ageDays` ago (received a minute before). */
async function givenEvents(count: number, status: string, ageDays: number): Promise<void> {
  await sql`
    insert into stripe_events (event_id, type, object_id, livemode, stripe_created_at, payload, status, last_error, duplicate_of, received_at, enqueued_at, finished_at)
    select 'evt_' || ${status} || '_' || ${ageDays} || '_' || i, 'charge.succeeded', 'ch_1', false, now(), '{}'::jsonb, ${status},
           case when ${status} = 'failed' then 'amount mismatch' end,
           case when ${status} = 'duplicate' then 'evt_original' end,
           now() - make_interval(days => ${ageDays}, mins => 1), now() - make_interval(days => ${ageDays}, mins => 1),
           case when ${status} <> 'processing' then now() - make_interval(days => ${ageDays}) end
    from generate_series(1, ${count}) as i`.execute(database.db);
}

async function remaining(): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; n: number }>`select status, count(*)::int as n from stripe_events group by status`.execute(database.db);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

test('finished events past the window go; young ones, processing and failed ones stay', async () => {
  for (const status of ['processed', 'ignored', 'duplicate', 'failed', 'processing']) await givenEvents(3, status, 40);
  await givenEvents(2, 'processed', 10);
  const result = await pruneEvents(database.db, { retentionDays: 31 });
  assert.equal(result.deleted, 9);
  assert.deepEqual(await remaining(), { processed: 2, failed: 3, processing: 3 });
  const { rows } = await sql<{ last_result: unknown }>`select last_result from maintenance_runs where name = 'prune'`.execute(database.db);
  assert.deepEqual(rows[0]?.last_result, { deleted: 9, batches: 1, deleted_jobs: 0, deleted_keys: 0, deleted_notifications: 0 });
});

test('fulfilment jobs out of attempts go once no worker holds them; the others stay', async () => {
  const claim = (eventId: string, maxAttempts: number) =>
    claimEvents(database.db, [incomingEvent(sampleEvent('charge.succeeded', exampleObject('charge'), { id: eventId }))], { maxAttempts });
  // evt_b: its last attempt running (a worker holds it); evt_a: out of attempts, unlocked
  // (deletable); evt_c: waiting.
  await claim('evt_b', 1);
  const worker = await holdJobs(database, 1);
  try {
    await claim('evt_a', 10);
    await claim('evt_c', 10);
    await sql`select graphile_worker.permanently_fail_jobs(array[${(await jobOf(database.db, 'evt_a'))!.id}]::bigint[], 'test: out of attempts')`.execute(
      database.db,
    );
    const result = await pruneEvents(database.db, { retentionDays: 31 });
    assert.equal(result.deleted_jobs, 1);
    assert.deepEqual(
      (await fulfilmentJobs(database.db)).flatMap((job) => job.event_ids),
      ['evt_b', 'evt_c'],
    );
  } finally {
    await worker.release();
    await deleteJobs(database.db);
  }
});

test('large backlogs go in batches', async () => {
  await givenEvents(2_500, 'processed', 100);
  const result = await pruneEvents(database.db, { retentionDays: 90, batchSize: 1_000 });
  assert.deepEqual({ deleted: result.deleted, batches: result.batches }, { deleted: 2_500, batches: 3 });
});

test('a retention under 31 days is refused: Stripe resends events for up to 30', async () => {
  await givenEvents(1, 'processed', 40);
  await assert.rejects(pruneEvents(database.db, { retentionDays: 30 }), /at least 31 days/);
  assert.deepEqual(await remaining(), { processed: 1 });
});

test('a pruned event delivered again grants nothing more', async () => {
  const service = await startTestService(database);
  try {
    const order = await givenOrder(database);
    const event = paidEvent(order);
    await service.deliver(event);
    assert.equal((await finishedEvent(database, event.id)).status, 'processed');
    await sql`update stripe_events set finished_at = now() - interval '40 days' where event_id = ${event.id}`.execute(database.db);
    assert.equal((await pruneEvents(database.db, { retentionDays: 31 })).deleted, 1);

    const again = await service.deliver(event);
    assert.deepEqual(again.body, { received: true }, 'claimed anew: the row is gone');
    // The grant already names this very event: the same outcome again, granted once.
    assert.equal((await finishedEvent(database, event.id)).status, 'processed');
    assert.equal((await grantsOf(database, order.order_id)).length, 1);
    assert.equal((await quotaOf(database, order.account_id)).granted, 40);
  } finally {
    await service.close();
  }
});

test("Idempotency-Keys past the window go, except a refund's: the next refund still gets the next number", async () => {
  const service = await startTestService(database);
  try {
    const order = await paidOrder(database, service);
    const checkout = () =>
      service.call('POST', '/api/checkout', { body: { package_id: 'starter', account_id: order.account_id }, headers: { 'idempotency-key': 'old-checkout' } });
    const refund = (key: string) =>
      service.call('POST', `/admin/api/orders/${order.order_id}/refund`, { body: { amount: 100 }, headers: { 'idempotency-key': key } });
    const first = await checkout();
    assert.equal(first.status, 201);
    assert.equal((await refund('old-refund')).status, 201);
    await sql`update api_idempotency_keys set created_at = now() - interval '40 days'`.execute(database.db);
    const young = await service.call('POST', '/api/checkout', {
      body: { package_id: 'starter', account_id: order.account_id },
      headers: { 'idempotency-key': 'young-checkout' },
    });
    assert.equal(young.status, 201);

    const result = await pruneEvents(database.db, { retentionDays: 31 });
    assert.equal(result.deleted_keys, 1);
    const { rows } = await sql<{ idempotency_key: string }>`select idempotency_key from api_idempotency_keys order by idempotency_key`.execute(database.db);
    assert.deepEqual(
      rows.map((r) => r.idempotency_key),
      ['checkout:young-checkout', 'refund:old-refund'],
    );
    const again = await checkout();
    assert.equal(again.status, 201);
    assert.notEqual(again.body.order_id, first.body.order_id, 'a pruned key is a new request');
    assert.equal((await refund('next-refund')).status, 201);
    assert.deepEqual(
      service.stripe.requests.filter((r) => r.path === '/v1/refunds').map((r) => r.idempotencyKey),
      [`refund:${order.order_id}:1`, `refund:${order.order_id}:2`],
    );
  } finally {
    await service.close();
  }
});

test('delivered notifications past the window go; pending and failed ones stay however old, and young ones stay', async () => {
  // Written by the real outbox; their deliveries then moved as the worker's attempts would move them.
  const outbox = createOutbox({ appWebhookUrls: ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b'] });
  const keys = ['delivered_old', 'half_delivered_old', 'failed_old', 'pending_old', 'delivered_young'];
  await database.db.transaction().execute((tx) =>
    outbox.add(
      tx,
      keys.map((key) => ({ type: 'order.paid', key: `prune:${key}`, accountId: 'acct_prune', sequence: 1, eventId: null, data: {} })),
    ),
  );
  const moved = (key: string, status: string, endpoints = sql`true`) =>
    sql`
    update notification_deliveries d set status = ${status}, last_error = case when ${status} = 'failed' then 'HTTP 500' end,
      delivered_at = case when ${status} = 'delivered' then now() end
    from notifications n where n.notification_id = d.notification_id and n.business_key = ${`prune:${key}`} and ${endpoints}`.execute(database.db);
  await moved('delivered_old', 'delivered');
  await moved('half_delivered_old', 'delivered', sql`d.endpoint like '%/a'`);
  await moved('failed_old', 'failed');
  await moved('delivered_young', 'delivered');
  // An attempt logged for every delivery, as the pump logs them.
  await sql`insert into notification_attempts (delivery_id, started_at, duration_ms, status_code) select delivery_id, now(), 1, 204 from notification_deliveries`.execute(
    database.db,
  );
  await sql`update notifications set created_at = now() - interval '40 days' where business_key like 'prune:%_old'`.execute(database.db);

  const result = await pruneEvents(database.db, { retentionDays: 31 });
  assert.equal(result.deleted_notifications, 1);
  const { rows } = await sql<{ business_key: string }>`select business_key from notifications where business_key like 'prune:%' order by business_key`.execute(
    database.db,
  );
  assert.deepEqual(
    rows.map((r) => r.business_key),
    ['prune:delivered_young', 'prune:failed_old', 'prune:half_delivered_old', 'prune:pending_old'],
  );
  const orphans = await sql<{
    n: number;
  }>`select count(*)::int as n from notification_deliveries d where not exists (select 1 from notifications n where n.notification_id = d.notification_id)`.execute(
    database.db,
  );
  assert.equal(orphans.rows[0]!.n, 0, 'the deliveries went with their notification');
  const attempts = await sql<{ orphaned: number; kept: number }>`
    select count(*) filter (where d.delivery_id is null)::int as orphaned, count(d.delivery_id)::int as kept
    from notification_attempts a left join notification_deliveries d using (delivery_id)`.execute(database.db);
  assert.deepEqual(attempts.rows[0], { orphaned: 0, kept: 8 }, 'the attempts went with their delivery, and only those');
});

test("a module's outbox rows go with the same cutoff: usage reports sent before it, never pending or failed ones, and their usage records stay", async () => {
  const reports = [
    { status: 'sent', daysAgo: 40 },
    { status: 'sent', daysAgo: 10 },
    { status: 'failed', daysAgo: 40 },
    { status: 'pending', daysAgo: 40 },
  ].map((report, i) => ({ ...report, usageId: `usage_${String(i + 1).padStart(32, 'a')}` }));
  for (const { status, daysAgo, usageId } of reports) {
    await sql`insert into usage_records (usage_id, account_id, subscription_id, event_name, quantity, used_at)
      values (${usageId}, 'acct_prune', 'subscr_prune', 'api_calls', 1, now() - ${daysAgo} * interval '1 day')`.execute(database.db);
    await sql`insert into usage_reports (usage_id, stripe_customer_id, status, sent_at, created_at)
      values (${usageId}, 'cus_prune', ${status}, ${status === 'sent' ? sql`now() - ${daysAgo} * interval '1 day'` : null}, now() - ${daysAgo} * interval '1 day')`.execute(
      database.db,
    );
  }
  const result = await pruneEvents(database.db, { retentionDays: 31, modules: businessModules });
  assert.deepEqual(result.deleted_by_module, { usage: 1 });
  const { rows } = await sql<{ usage_id: string }>`select usage_id from usage_reports where stripe_customer_id = 'cus_prune' order by usage_id`.execute(
    database.db,
  );
  assert.deepEqual(
    rows.map((row) => row.usage_id),
    reports.slice(1).map((report) => report.usageId),
  );
  const records = await sql<{ n: number }>`select count(*)::int as n from usage_records where account_id = 'acct_prune'`.execute(database.db);
  assert.equal(records.rows[0]!.n, 4);
});
