// Every ops script as an operator runs it: --help, a clear error and exit 2 for bad arguments,
// --json for machines, a non-zero exit when the result is a failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { promisify } from 'node:util';
import { claimEvents } from '../../src/events/event-store.js';
import { parkWaiting } from '../../src/events/event-waits.js';
import { createOutbox } from '../../src/notifications/outbox.js';
import { applicationNameOf } from '../../src/db/pools.js';
import { databaseForFile } from '../support/database.js';
import { ADMIN_TOKEN, API_TOKEN, STRIPE_SECRET_KEY, WEBHOOK_SECRET } from '../support/service.js';
import { incomingEvent } from '../support/factories.js';
import { exampleObject, sampleEvent } from '../../src/stripe/sample-events.js';
import { startOfflineStripe } from '../../src/dev/offline-stripe/index.js';

const run = promisify(execFile);
const database = databaseForFile();

/** Runs scripts/<name>.ts as `npm run <name>` would (npm sets npm_lifecycle_event), unless `viaNpm` is false. */
async function script(
  name: string,
  args: string[],
  { viaNpm = true, extraEnv = {} }: { viaNpm?: boolean; extraEnv?: Record<string, string> } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    API_TOKEN,
    ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    ...extraEnv,
  };
  if (viaNpm) env.npm_lifecycle_event = name;
  else delete env.npm_lifecycle_event;
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', `scripts/${name}.ts`, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('every script', () => {
  for (const name of ['status', 'sweep', 'replay', 'notifications', 'reconcile', 'prune', 'migrate', 'send-event', 'catalog', 'usage']) {
    test(`${name}: --help, and exit 2 naming a bad option`, async () => {
      const help = await script(name, ['--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`usage: npm run ${name}`));
      const bad = await script(name, ['--no-such-option']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /error: .*--no-such-option/);
    });
  }
});

test('started without npm (as in the image), a script shows how it was started, not npm run', async () => {
  const help = await script('status', ['--help'], { viaNpm: false });
  assert.match(help.stdout, /^usage: node --import tsx scripts\/status\.ts \[--since/);
  assert.doesNotMatch(help.stdout, /npm run/);
});

test('status --json has the admin API shape and exits 0 when nothing failed', async () => {
  const { code, stdout } = await script('status', ['--json']);
  assert.equal(code, 0);
  const status = JSON.parse(stdout) as Record<string, unknown>;
  assert.deepEqual(Object.keys(status).sort(), [
    'by_type',
    'counts',
    'events_queued',
    'failed',
    'history_counted_at',
    'jobs_queued',
    'last_sweep_at',
    'next_sweep_at',
    'notifications',
    'oldest_processing_age_seconds',
    'waiting',
    'waiting_events',
    'workers_connected',
  ]);
});

test('status: before the first sweep, when it is due while a worker is connected, and a warning when none is', async () => {
  const alone = await script('status', []);
  assert.match(alone.stdout, /^last sweep: {2}never {2}← no worker is connected to this database, so no sweep runs: start one \(npm start, or ROLE=worker\)$/m);

  // A worker's sessions, as graphile-worker's LISTEN connection holds one for as long as it runs.
  const worker = new pg.Client({ connectionString: database.url, application_name: applicationNameOf('worker') });
  await worker.connect();
  try {
    const { stdout } = await script('status', []);
    const due = /^last sweep: {2}none yet: a worker is running, the first is due at (\S+) \(SWEEP_CRON '\* \* \* \* \*'\)$/m.exec(stdout);
    assert.ok(due, stdout);
    const inMs = Date.parse(due[1]!) - Date.now();
    assert.ok(inMs > 0 && inMs <= 60_000 && Date.parse(due[1]!) % 60_000 === 0, `the next whole minute: ${due[1]!}`);
    const hourly = JSON.parse((await script('status', ['--json'], { extraEnv: { SWEEP_CRON: '0 * * * *' } })).stdout) as {
      next_sweep_at: string;
      workers_connected: number;
    };
    assert.equal(hourly.workers_connected, 1);
    assert.equal(new Date(hourly.next_sweep_at).getUTCMinutes(), 0);
  } finally {
    await worker.end();
  }
});

test('status counts events by type and status within --since', async () => {
  const events = ['charge.succeeded', 'charge.succeeded', 'invoice.upcoming'].map((type) => incomingEvent(sampleEvent(type, exampleObject('charge'))));
  await claimEvents(database.db, events, { maxAttempts: 10 });
  const { stdout } = await script('status', ['--json', '--since', '1h']);
  const byType = (JSON.parse(stdout) as { by_type: Array<{ type: string; counts: Record<string, number> }> }).by_type;
  assert.deepEqual(
    byType.map((t) => [t.type, t.counts.processing]),
    [
      ['charge.succeeded', 2],
      ['invoice.upcoming', 1],
    ],
  );
});

test('status lists the waiting events, each with what it waits for and until when', async () => {
  const event = incomingEvent(sampleEvent('charge.dispute.funds_withdrawn', exampleObject('dispute')));
  await claimEvents(database.db, [event], { maxAttempts: 10 });
  const reason = 'dispute dp_1: no order paid by payment intent pi_1 (yet)';
  await database.db
    .transaction()
    .execute((tx) => parkWaiting(tx, [{ eventId: event.eventId, keys: ['payment_intent:pi_1'], reason, ignoreWhenExhausted: true }]));
  const { stdout } = await script('status', []);
  assert.match(stdout, /^waiting: 1 /m);
  assert.match(
    stdout,
    new RegExp(
      `^  ${event.eventId}  charge\\.dispute\\.funds_withdrawn  waits for payment_intent:pi_1 until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  dispute dp_1`,
      'm',
    ),
  );
  const json = JSON.parse((await script('status', ['--json'])).stdout) as { waiting_events: Array<{ event_id: string; waits_for: string[] }> };
  assert.deepEqual(
    json.waiting_events.map((e) => [e.event_id, e.waits_for]),
    [[event.eventId, ['payment_intent:pi_1']]],
  );
});

test('bad values are refused with the flag named and an example', async () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['prune', ['--older-than-days', '7'], /--older-than-days must be a whole number from 31 to 36500, e\.g\. --older-than-days 90: Stripe resends/],
    // Past a century the cutoff would leave Postgres' range of dates: refused here, not by Postgres.
    ['prune', ['--older-than-days', '99999999'], /--older-than-days must be a whole number from 31 to 36500/],
    ['status', ['--since', 'yesterday'], /--since must be a duration like 30m, 24h or 7d, e\.g\. --since 7d/],
    ['status', ['--since', '999999w'], /--since can be at most 36500d/],
    ['replay', ['--status', 'failed', '--since', '999999w'], /--since can be at most 36500d/],
    ['reconcile', ['--since', '40d'], /--since can be at most 30d/],
    ['reconcile', [], /--since is required/],
    ['sweep', ['--stale-after', 'soon'], /--stale-after must be a whole number/],
    // Number() would take these; a whole-number option does not.
    ['status', ['--failed', '1e3'], /--failed must be a whole number of at least 0, e\.g\. --failed 20/],
    ['send-event', ['charge.succeeded', '--times', ''], /--times must be a whole number from 1 to 1000/],
    ['replay', ['--status', 'lost'], /--status must be one of/],
    ['replay', [], /give event ids or --status/],
    ['notifications', ['--replay', 'msg_ok', 'evt_1'], /--replay takes notification ids \(msg_ and letters, digits, _ or -.*\); got "evt_1"/],
    ['notifications', ['--replay'], /--replay needs at least one notification id/],
    ['notifications', ['msg_ok'], /notification ids are replayed with --replay <id…>; got msg_ok/],
    ['notifications', ['--replay', 'msg_ok', '--replay-failed'], /give --replay <id…> or --replay-failed, not both/],
    ['notifications', ['--replay-failed', '--limit', '5'], /--status and --limit choose what to list/],
    ['notifications', ['--status', 'lost'], /--status must be one of pending, delivered, failed/],
    ['notifications', ['--limit', '501'], /--limit must be a whole number from 1 to 500/],
    ['usage', [], /give one of --status, --replay <usage_id…> or --replay-failed/],
    ['usage', ['--status', '--replay-failed'], /give one of --status/],
    ['usage', ['--replay'], /--replay needs at least one usage id/],
    ['usage', ['--replay', 'usage_1'], /--replay takes usage ids \(usage_ and 32 hex digits\); got "usage_1"/],
    ['usage', ['--status', '--list', 'lost'], /--list must be one of pending, sent, failed/],
    ['usage', ['--replay-failed', '--limit', '5'], /--list and --limit go with --status/],
  ];
  for (const [name, args, message] of cases) {
    const result = await script(name, args);
    assert.equal(result.code, 2, `${name} ${args.join(' ')}`);
    assert.match(result.stderr, message);
  }
});

test('replay of an unknown event exits 1 and says which', async () => {
  const result = await script('replay', ['evt_unknown', '--json']);
  assert.equal(result.code, 1);
  assert.deepEqual(JSON.parse(result.stdout), { replayed: [], not_found: ['evt_unknown'], limit_reached: false });
});

test('replay --status stops at --limit, says so, and the next run takes the rest', async () => {
  const events = Array.from({ length: 3 }, () => incomingEvent(sampleEvent('charge.succeeded', exampleObject('charge'))));
  await claimEvents(database.db, events, { maxAttempts: 10 });
  const ids = events.map((e) => e.eventId);
  await sql`update stripe_events set status = 'failed', last_error = 'amount mismatch', finished_at = now() where event_id = any(${ids})`.execute(database.db);

  const first = await script('replay', ['--status', 'failed', '--limit', '2']);
  assert.equal(first.code, 0);
  assert.match(first.stdout, /replayed 2 event\(s\)/);
  assert.match(first.stdout, /stopped at --limit 2: more may match; run it again for the next ones/);
  const second = JSON.parse((await script('replay', ['--status', 'failed', '--limit', '2', '--json'])).stdout) as {
    replayed: string[];
    limit_reached: boolean;
  };
  assert.deepEqual({ replayed: second.replayed.length, limit_reached: second.limit_reached }, { replayed: 1, limit_reached: false });
  const left = await database.db.selectFrom('stripe_events').select('status').distinct().where('event_id', 'in', ids).execute();
  assert.deepEqual(left, [{ status: 'processing' }]);
});

const ENDPOINT = 'http://127.0.0.1:9/x';

/** A notification written by the real outbox: one delivery to `endpoint`, pending and due. */
async function writeNotification(key: string, endpoint = ENDPOINT): Promise<{ notificationId: string; deliveryId: string }> {
  const outbox = createOutbox({ appWebhookUrls: [endpoint] });
  await database.db
    .transaction()
    .execute((tx) => outbox.add(tx, [{ type: 'order.paid', key: `order.paid:${key}`, accountId: 'acct_x', sequence: 1, eventId: null, data: {} }]));
  const row = await database.db
    .selectFrom('notification_deliveries as d')
    .innerJoin('notifications as n', 'n.notification_id', 'd.notification_id')
    .select(['d.notification_id', 'd.delivery_id'])
    .where('n.business_key', '=', `order.paid:${key}`)
    .executeTakeFirstOrThrow();
  return { notificationId: row.notification_id, deliveryId: row.delivery_id };
}

/** Leaves the delivery as the worker's attempts would once they ran out, the last answered with a 500: no worker runs in this file. */
async function failDelivery(deliveryId: string): Promise<void> {
  await sql`update notification_deliveries set status = 'failed', attempts = 3, last_attempt_at = now(), last_status_code = 500, last_error = 'HTTP 500'
    where delivery_id = ${deliveryId}`.execute(database.db);
}

async function failedNotification(key: string, endpoint = ENDPOINT): Promise<{ notificationId: string; deliveryId: string }> {
  const written = await writeNotification(key, endpoint);
  await failDelivery(written.deliveryId);
  return written;
}

async function deliveryState(deliveryId: string): Promise<{ status: string; attempts: number; due: boolean }> {
  return database.db
    .selectFrom('notification_deliveries')
    .select(['status', 'attempts', sql<boolean>`status = 'pending' and leased_until is null and next_attempt_at <= now()`.as('due')])
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirstOrThrow();
}

test('notifications lists the failed ones by default, each delivery with its attempts and last error', async () => {
  const failed = await failedNotification('ord_listed');
  const pending = await writeNotification('ord_pending');

  const { code, stdout } = await script('notifications', []);
  assert.equal(code, 0);
  assert.match(stdout, new RegExp(`^${failed.notificationId}  order\\.paid  account acct_x  \\d{4}-\\d\\d-\\d\\dT.*Z$`, 'm'));
  assert.match(stdout, /^ {2}http:\/\/127\.0\.0\.1:9\/x {2}failed {2}attempts 3 {2}last status 500 {2}HTTP 500$/m);
  assert.doesNotMatch(stdout, new RegExp(pending.notificationId));

  const listed = JSON.parse((await script('notifications', ['--status', 'pending', '--json'])).stdout) as {
    notifications: Array<{ notification_id: string }>;
    limit_reached: boolean;
  };
  assert.deepEqual(
    listed.notifications.map((n) => n.notification_id),
    [pending.notificationId],
  );
  assert.equal(listed.limit_reached, false);
});

test('notifications --replay <id> queues a failed delivery again with a fresh count of attempts; an unknown id exits 1', async () => {
  const { notificationId, deliveryId } = await failedNotification('ord_replayed');
  assert.deepEqual(await deliveryState(deliveryId), { status: 'failed', attempts: 3, due: false });

  const result = await script('notifications', ['--replay', notificationId, '--json']);
  assert.equal(result.code, 0);
  assert.deepEqual(JSON.parse(result.stdout), { replayed: [notificationId], in_flight: [], not_found: [] });
  assert.deepEqual(await deliveryState(deliveryId), { status: 'pending', attempts: 0, due: true });

  const unknown = await script('notifications', ['--replay', 'msg_unknown']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stdout, /replayed 0 notification\(s\)\nnot found: msg_unknown/);
});

test('notifications --replay-failed queues every failed delivery again', async () => {
  const written = [await failedNotification('ord_all_1'), await failedNotification('ord_all_2')];

  const result = await script('notifications', ['--replay-failed', '--json']);
  assert.equal(result.code, 0);
  const { replayed } = JSON.parse(result.stdout) as { replayed: string[] };
  for (const { notificationId } of written) assert.ok(replayed.includes(notificationId), notificationId);
  for (const { deliveryId } of written) assert.deepEqual(await deliveryState(deliveryId), { status: 'pending', attempts: 0, due: true });
  const left = await database.db.selectFrom('notification_deliveries').select('delivery_id').where('status', '=', 'failed').execute();
  assert.deepEqual(left, []);
});

test('status shows, per endpoint, the notifications pending and failed and the age of the oldest pending one', async () => {
  // An endpoint of its own: the other tests' notifications are not counted in it.
  const endpoint = 'http://127.0.0.1:9/status';
  await writeNotification('ord_status_pending', endpoint);
  await failedNotification('ord_status_failed', endpoint);

  const { code, stdout } = await script('status', ['--json']);
  assert.equal(code, 0, 'a failed notification is not a failed event');
  const { notifications } = JSON.parse(stdout) as {
    notifications: { enabled: boolean; endpoints: Array<{ endpoint: string; pending: number; failed: number; oldest_pending_age_seconds: number | null }> };
  };
  assert.equal(notifications.enabled, false, 'APP_WEBHOOK_URL is not set for the script');
  const summary = notifications.endpoints.find((e) => e.endpoint === endpoint);
  assert.deepEqual(
    { ...summary, oldest_pending_age_seconds: typeof summary?.oldest_pending_age_seconds },
    { endpoint, pending: 1, failed: 1, oldest_pending_age_seconds: 'number' },
  );

  const text = (await script('status', [])).stdout;
  assert.match(text, /^ {2}http:\/\/127\.0\.0\.1:9\/status: pending 1, failed 1, oldest pending \d+s$/m);
  assert.match(text, /failed ones: npm run notifications -- --status failed/);
});

describe('catalog', () => {
  const add = ['add-package', '--id', 'cli_pack', '--name', 'CLI pack', '--amount', '1900', '--currency', 'chf', '--credits', '10'];

  test('adds, lists and archives, with errors naming the option', async () => {
    const bad = await script('catalog', [...add.slice(0, -1), 'ten']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /error: --credits: must be a positive integer/);
    const huge = await script('catalog', [...add.slice(0, -1), '2147483647']);
    assert.equal(huge.code, 2);
    assert.match(huge.stderr, /error: --credits: must be a positive integer of at most 1000000/);
    assert.equal((await script('catalog', ['sell'])).code, 2);

    const added = await script('catalog', add);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /added package cli_pack: 1900 chf, 10 credits/);
    const again = await script('catalog', add);
    assert.equal(again.code, 1);
    assert.match(again.stdout, /refused: package cli_pack exists/);

    const plan = await script('catalog', [
      'add-plan',
      '--id',
      'cli_plan',
      '--name',
      'CLI plan',
      '--amount',
      '500',
      '--currency',
      'eur',
      '--credits',
      '5',
      '--interval',
      'week',
      '--interval-count',
      '2',
      '--features',
      'sso,audit_log',
      '--json',
    ]);
    assert.equal(plan.code, 0, plan.stderr);
    assert.deepEqual((JSON.parse(plan.stdout) as { item: unknown }).item, {
      id: 'cli_plan',
      name: 'CLI plan',
      amount: 500,
      currency: 'eur',
      credits: 5,
      active: true,
      stripe_price_id: null,
      features: ['sso', 'audit_log'],
      interval: 'week',
      interval_count: 2,
    });

    const archived = await script('catalog', ['archive', 'cli_pack']);
    assert.equal(archived.code, 0, archived.stderr);
    assert.match(archived.stdout, /archived package cli_pack/);
    assert.equal((await script('catalog', ['archive', 'no_such'])).code, 1);

    const list = JSON.parse((await script('catalog', ['list', '--json'])).stdout) as {
      packages: Array<{ id: string; active: boolean }>;
      plans: Array<{ id: string }>;
    };
    assert.ok(list.packages.some((p) => p.id === 'cli_pack' && !p.active));
    assert.ok(list.plans.some((p) => p.id === 'cli_plan'));
    assert.match((await script('catalog', ['list'])).stdout, /archived cli_pack/);
  });

  test('--price checks the Price at Stripe and refuses one that differs', async () => {
    const stripe = await startOfflineStripe();
    try {
      stripe.addPrice({ ...exampleObject('price'), id: 'price_cli', type: 'one_time', recurring: null, unit_amount: 2900, currency: 'chf' });
      const extraEnv = { STRIPE_SECRET_KEY, STRIPE_API_BASE: stripe.url };
      const refused = await script(
        'catalog',
        ['add-package', '--id', 'cli_priced', '--name', 'Priced', '--amount', '1900', '--currency', 'chf', '--credits', '10', '--price', 'price_cli'],
        { extraEnv },
      );
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stdout, /refused: --price: its unit_amount is 2900, the amount 1900/);
      const added = await script(
        'catalog',
        ['add-package', '--id', 'cli_priced', '--name', 'Priced', '--amount', '2900', '--currency', 'chf', '--credits', '10', '--price', 'price_cli'],
        { extraEnv },
      );
      assert.equal(added.code, 0, added.stderr);
      assert.match(added.stdout, /sold as Price price_cli/);
    } finally {
      await stripe.close();
    }
  });
});

test("catalog import-stripe makes a package and a plan of a Product's active Prices, once", async () => {
  const stripe = await startOfflineStripe();
  try {
    const price = exampleObject('price');
    stripe.addProduct({ ...exampleObject('product'), id: 'prod_cli', name: 'Thesis check', metadata: { credits: '10' } });
    stripe.addProduct({ ...exampleObject('product'), id: 'prod_other', name: 'A T-shirt', metadata: {} });
    stripe.addPrice({
      ...price,
      id: 'price_cli_once',
      product: 'prod_cli',
      type: 'one_time',
      recurring: null,
      unit_amount: 1900,
      currency: 'chf',
      lookup_key: 'thesis_once',
    });
    stripe.addPrice({ ...price, id: 'price_CLI_Monthly', product: 'prod_cli', unit_amount: 900, currency: 'chf', lookup_key: null });
    stripe.addPrice({
      ...price,
      id: 'price_cli_old',
      product: 'prod_cli',
      active: false,
      type: 'one_time',
      recurring: null,
      unit_amount: 2900,
      currency: 'chf',
    });
    stripe.addPrice({ ...price, id: 'price_shirt', product: 'prod_other', type: 'one_time', recurring: null, unit_amount: 2500, currency: 'chf' });
    const extraEnv = { STRIPE_SECRET_KEY, STRIPE_API_BASE: stripe.url };

    assert.equal((await script('catalog', ['import-stripe'], { extraEnv })).code, 2);
    const first = await script('catalog', ['import-stripe', '--all', '--json'], { extraEnv });
    assert.equal(first.code, 0, first.stdout + first.stderr);
    const result = JSON.parse(first.stdout) as { created: Array<{ id: string; credits: number; interval?: string }>; existing: unknown[]; skipped: unknown[] };
    assert.deepEqual(
      result.created.map((item) => [item.id, item.credits, item.interval]),
      [
        ['thesis_once', 10, undefined],
        ['price_cli_monthly', 10, 'month'],
      ],
    );
    assert.deepEqual(result.skipped, []);

    const again = await script('catalog', ['import-stripe', '--product', 'prod_cli'], { extraEnv });
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /^created 0, already in the catalog 2, skipped 0/);
    const none = await script('catalog', ['import-stripe', '--product', 'prod_other'], { extraEnv });
    assert.equal(none.code, 1);
    assert.match(none.stdout, /skipped prod_other: its metadata.credits is not a positive integer/);
  } finally {
    await stripe.close();
  }
});

test('usage: --status counts and lists the failed reports with their reason; --replay sends a failed one again, and exits 1 naming one that is not failed', async () => {
  const ids = ['failed', 'sent'].map((status, i) => ({ status, usageId: `usage_${String(i + 1).padStart(32, 'c')}` }));
  for (const { status, usageId } of ids) {
    await sql`insert into usage_records (usage_id, account_id, subscription_id, event_name, quantity) values (${usageId}, 'acct_cli', 'subscr_cli', 'api_calls', 2)`.execute(
      database.db,
    );
    await sql`insert into usage_reports (usage_id, stripe_customer_id, status, sent_at, last_error)
      values (${usageId}, 'cus_cli', ${status}, ${status === 'sent' ? sql`now()` : null}, ${status === 'failed' ? 'Stripe refused the meter event: timestamp_too_far_in_past (timestamp)' : null})`.execute(
      database.db,
    );
  }
  const [failed, sent] = ids.map((id) => id.usageId);
  const status = await script('usage', ['--status']);
  assert.equal(status.code, 0);
  assert.match(status.stdout, /^usage reports: 0 pending \(oldest used 0 s ago\), 1 failed, 1 sent$/m);
  assert.match(status.stdout, new RegExp(`^${failed}  failed  api_calls 2 .*timestamp_too_far_in_past`, 'm'));

  const refused = await script('usage', ['--replay', failed!, sent!, '--json']);
  assert.equal(refused.code, 1);
  assert.deepEqual(JSON.parse(refused.stdout), { replayed: [failed], not_failed: [sent], not_found: [] });
  const { rows } = await sql<{
    status: string;
    first_sent_at: Date | null;
  }>`select status, first_sent_at from usage_reports where usage_id = ${failed!}`.execute(database.db);
  assert.deepEqual(rows, [{ status: 'pending', first_sent_at: null }]);
});
