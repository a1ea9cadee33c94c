// Reconcile claims what Stripe has and we missed, through the webhook's own claim path, and
// running it twice changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { reconcileEvents } from '../../src/maintenance/reconcile.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { thinNotification } from '../../src/stripe/sample-events.js';

import { finishedEvent, givenOrder, paidEvent, quotaOf } from '../support/factories.js';
import { serviceForFile, STRIPE_SECRET_KEY } from '../support/service.js';

const file = serviceForFile();

test('events missed by the webhook are claimed and fulfilled; a second run claims nothing', async () => {
  const orders = await Promise.all(Array.from({ length: 5 }, () => givenOrder(file.database)));
  const events = orders.map((order) => paidEvent(order));
  // The first two reached us; the endpoint was down for the other three.
  for (const event of events.slice(0, 2)) assert.equal((await file.service.deliver(event)).status, 200);
  events.forEach((event, i) => file.service.stripe.addEvent({ ...event }, { delivered: i < 2 }));
  // An event older than the window is not asked for.
  file.service.stripe.addEvent({ ...paidEvent(await givenOrder(file.database)), created: Math.floor(Date.now() / 1000) - 5 * 86_400 });

  const stripe = createStripeClient(STRIPE_SECRET_KEY, file.service.stripe.url, { timeoutMs: 5_000 });
  const options = { since: new Date(Date.now() - 86_400_000), maxAttempts: 10 };
  const dry = await reconcileEvents(file.database.db, stripe, { ...options, dryRun: true });
  assert.deepEqual({ listed: dry.listed, missing: dry.missing, claimed: dry.claimed }, { listed: 5, missing: 3, claimed: 0 });

  const first = await reconcileEvents(file.database.db, stripe, options);
  assert.deepEqual({ listed: first.listed, missing: first.missing, claimed: first.claimed }, { listed: 5, missing: 3, claimed: 3 });
  assert.deepEqual(new Set(first.event_ids), new Set(events.slice(2).map((e) => e.id)));
  for (const event of events) assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
  for (const order of orders) assert.equal((await quotaOf(file.database, order.account_id)).granted, 40);

  const second = await reconcileEvents(file.database.db, stripe, options);
  assert.deepEqual({ missing: second.missing, claimed: second.claimed }, { missing: 0, claimed: 0 });
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events`.execute(file.database.db);
  assert.equal(rows[0]!.n, 5);
});

test('an event Stripe lists of the other mode is claimed as listed and ends failed, as a delivered one would: nothing granted', async () => {
  const order = await givenOrder(file.database);
  const live = { ...paidEvent(order), livemode: true };
  file.service.stripe.addEvent({ ...live }, { delivered: false });
  const stripe = createStripeClient(STRIPE_SECRET_KEY, file.service.stripe.url, { timeoutMs: 5_000 });
  const run = await reconcileEvents(file.database.db, stripe, { since: new Date(Date.now() - 86_400_000), maxAttempts: 10, lists: 'snapshot' });
  assert.ok(run.event_ids.includes(live.id));

  const row = await finishedEvent(file.database, live.id);
  assert.deepEqual([row.status, row.livemode], ['failed', true]);
  assert.match(row.last_error ?? '', /livemode mismatch/);
  assert.equal((await quotaOf(file.database, order.account_id)).granted, 0);
});

test('--undelivered-only asks Stripe for failed deliveries only', async () => {
  const stripe = createStripeClient(STRIPE_SECRET_KEY, file.service.stripe.url, { timeoutMs: 5_000 });
  const before = file.service.stripe.requests.length;
  await reconcileEvents(file.database.db, stripe, { since: new Date(Date.now() - 3_600_000), undeliveredOnly: true, maxAttempts: 10 });
  const listed = file.service.stripe.requests.slice(before).filter((r) => r.path === '/v1/events');
  assert.ok(listed.length >= 1);
  assert.ok(listed.every((r) => r.params.delivery_success === 'false'));
});

test("a thin destination's notifications missed by the webhook are claimed from the v2 list, page after page, and fulfilled once", async () => {
  const orders = await Promise.all(Array.from({ length: 2 }, () => givenOrder(file.database)));
  const notifications = orders.map((order) => {
    const event = paidEvent(order);
    file.service.stripe.addEvent({ ...event });
    return thinNotification(event);
  });
  // More than one page (100): pings, which no module handles.
  const pings = Array.from({ length: 103 }, (_, i) => ({
    ...notifications[0]!,
    id: `evt_test_ping_${process.pid}_${i}`,
    type: 'v2.core.event_destination.ping',
    related_object: { id: 'ed_test_61Tm', type: 'v2.core.event_destination', url: '/v2/core/event_destinations/ed_test_61Tm' },
    snapshot_event: undefined,
  }));
  for (const notification of [...notifications, ...pings]) file.service.stripe.addThinEvent({ ...notification });

  const stripe = createStripeClient(STRIPE_SECRET_KEY, file.service.stripe.url, { timeoutMs: 5_000 });
  const options = { since: new Date(Date.now() - 3_600_000), maxAttempts: 10, lists: 'thin' as const };
  const first = await reconcileEvents(file.database.db, stripe, options);
  assert.deepEqual({ listed: first.listed, missing: first.missing, claimed: first.claimed }, { listed: 105, missing: 105, claimed: 105 });
  assert.ok(file.service.stripe.requests.filter((r) => r.path === '/v2/core/events').length >= 2);
  for (const [i, notification] of notifications.entries()) {
    assert.equal((await finishedEvent(file.database, notification.id)).status, 'processed');
    assert.equal((await quotaOf(file.database, orders[i]!.account_id)).granted, 40);
  }
  assert.equal((await finishedEvent(file.database, pings[0]!.id)).status, 'ignored');

  const second = await reconcileEvents(file.database.db, stripe, options);
  assert.deepEqual({ listed: second.listed, missing: second.missing, claimed: second.claimed }, { listed: 105, missing: 0, claimed: 0 });
});

test("a v2 page URL that leaves Stripe's API once resolved is never fetched with our key", async () => {
  const stripe = createStripeClient(STRIPE_SECRET_KEY, file.service.stripe.url, { timeoutMs: 5_000 });
  // As a scheduled run would resume from a cursor it stored: the URL is next_page_url as written.
  await sql`insert into reconcile_cursors (list, resume_from) values ('thin', '/v2/core/%2e%2e/%2e%2e/_ctl?page=1') on conflict (list) do update set resume_from = excluded.resume_from`.execute(
    file.database.db,
  );
  const before = file.service.stripe.requests.length;
  await assert.rejects(
    reconcileEvents(file.database.db, stripe, { since: new Date(Date.now() - 3_600_000), maxAttempts: 10, lists: 'thin', resume: true }),
    /next_page_url that is not a path of its \/v1\/ or \/v2\/ API once resolved/,
  );
  assert.deepEqual(
    file.service.stripe.requests.slice(before).filter((r) => !r.path.startsWith('/v2/core/events')),
    [],
  );
  await sql`delete from reconcile_cursors`.execute(file.database.db);
});
