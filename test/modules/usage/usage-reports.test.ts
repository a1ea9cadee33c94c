// Usage billed once: a run under a usage-billed plan is recorded as usage and reported to the
// plan's Stripe meter by the pump, whatever Stripe does meanwhile (away for an hour, answers lost
// after it recorded, inside and past its 24-hour identifier window), whatever pumps it (two at
// once), and however often the app retries the run with its key. Each test ends with the meter's
// total in the stand-in equal to the usage recorded, exactly.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { createLogger } from '../../../src/logger.js';
import { Metrics } from '../../../src/metrics/metrics.js';
import { billingModule } from '../../../src/modules/billing/index.js';
import { invoiceObject } from '../../../src/modules/billing/sample-events.js';
import { addGrants } from '../../../src/modules/ledger/account-credits.js';
import { usageReportPump } from '../../../src/modules/usage/report-pump.js';
import { createStripeClient } from '../../../src/stripe/client.js';
import { sampleEvent } from '../../../src/stripe/sample-events.js';
import { StripeCalls } from '../../../src/stripe/stripe-calls.js';
import { quotaOf } from '../../support/factories.js';
import { fulfilWith, handlersOf } from '../../support/handlers.js';
import { meteredAccount, meteredPrice, type MeteredAccount } from '../../support/metered.js';
import { ADMIN_TOKEN, serviceForFile, STRIPE_SECRET_KEY } from '../../support/service.js';

// No worker: the tests drive the pump themselves, one round at a time.
const file = serviceForFile({ env: { ROLE: 'web' } });
const METER_EVENTS = '/v1/billing/meter_events';
const HOUR_MS = 3600 * 1000;

function pump() {
  const { config, pools, stripe } = file.service;
  const stripeCalls = new StripeCalls(createStripeClient(STRIPE_SECRET_KEY, stripe.url, { timeoutMs: config.stripeTimeoutMs }), {
    maxConcurrent: 50,
    timeoutMs: config.stripeTimeoutMs,
    metrics: new Metrics(pools.worker.db),
    logger: createLogger('silent'),
  });
  return usageReportPump({ db: pools.worker.db, stripeCalls }, { retryDelayMs: () => HOUR_MS });
}

async function use(account: MeteredAccount, quantity: number, key = `key-${randomUUID()}`) {
  const reply = await file.service.call('POST', `/api/accounts/${account.accountId}/runs`, { body: { quantity }, headers: { 'idempotency-key': key } });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body;
}

interface ReportState {
  usage_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

async function reportsOf(account: MeteredAccount): Promise<ReportState[]> {
  const { rows } = await sql<ReportState>`
    select r.usage_id, r.status, r.attempts, r.last_error from usage_reports r join usage_records u using (usage_id)
    where u.account_id = ${account.accountId} order by u.used_at`.execute(file.database.db);
  return rows;
}

async function usageRecorded(account: MeteredAccount): Promise<number> {
  const { rows } = await sql<{
    total: number;
  }>`select coalesce(sum(quantity), 0)::int as total from usage_records where account_id = ${account.accountId}`.execute(file.database.db);
  return rows[0]!.total;
}

/** Time passes for us: every pending report of the account is due, its earlier sends `hours` older. */
async function hoursPass(account: MeteredAccount, hours: number): Promise<void> {
  await sql`
    update usage_reports set next_attempt_at = now(), first_sent_at = first_sent_at - ${hours} * interval '1 hour'
    where status = 'pending' and usage_id in (select usage_id from usage_records where account_id = ${account.accountId})`.execute(file.database.db);
  file.service.stripe.advanceClock(hours * HOUR_MS);
}

const sendsOf = (usageId: unknown) => file.service.stripe.requests.filter((r) => r.path === METER_EVENTS && r.params.identifier === usageId).length;

async function assertBilledExactly(account: MeteredAccount): Promise<void> {
  assert.equal(file.service.stripe.meterTotal(account.eventName, account.stripeCustomerId), await usageRecorded(account));
}

test('a run under a usage-billed plan is recorded as usage, draws no credits, and a retry with its key is the same usage, reported once', async () => {
  const account = await meteredAccount(file);
  await file.database.db.transaction().execute((tx) => addGrants(tx, [{ accountId: account.accountId, credits: 10 }]));
  const first = await use(account, 3, 'the-same-key');
  assert.equal(first.kind, 'usage');
  assert.equal(first.quantity, 3);
  assert.equal(first.event_name, account.eventName);
  assert.match(String(first.usage_id), /^usage_[0-9a-f]{32}$/);
  assert.deepEqual(await use(account, 3, 'the-same-key'), first);
  assert.equal((await quotaOf(file.database, account.accountId)).remaining, 10);
  // Nothing was sent in the request.
  assert.equal(sendsOf(first.usage_id), 0);

  const pumper = pump();
  assert.equal(await pumper.pumpOnce(), 'idle');
  assert.equal(await pumper.pumpOnce(), 'idle');
  assert.deepEqual(
    (await reportsOf(account)).map((r) => [r.status, r.attempts]),
    [['sent', 1]],
  );
  assert.equal(sendsOf(first.usage_id), 1);
  await assertBilledExactly(account);
});

test('Stripe away for an hour, then back: every report is sent once it is back, none twice', async () => {
  const account = await meteredAccount(file);
  for (const quantity of [1, 2, 3, 4]) await use(account, quantity);
  const pumper = pump();
  file.service.stripe.failNext(1_000, 503);
  for (let quarter = 0; quarter < 4; quarter++) {
    await pumper.pumpOnce();
    await hoursPass(account, 0.25);
  }
  assert.ok((await reportsOf(account)).every((r) => r.status === 'pending' && r.attempts === 4));
  assert.equal(file.service.stripe.meterTotal(account.eventName, account.stripeCustomerId), 0);
  file.service.stripe.failNext(0);
  await pumper.pumpOnce();
  assert.ok((await reportsOf(account)).every((r) => r.status === 'sent'));
  await assertBilledExactly(account);
});

test('an answer lost after Stripe recorded the event, inside the window: sent again under its identifier, billed once', async () => {
  const account = await meteredAccount(file);
  const { usage_id } = await use(account, 7);
  const pumper = pump();
  // The first send and the SDK's own retry of it: both recorded, both answers lost.
  file.service.stripe.loseAnswers(METER_EVENTS, 2);
  await pumper.pumpOnce();
  const [lost] = await reportsOf(account);
  assert.equal(lost!.status, 'pending');
  assert.match(lost!.last_error!, /may have been recorded/);
  await hoursPass(account, 1);
  await pumper.pumpOnce();
  assert.equal((await reportsOf(account))[0]!.status, 'sent');
  assert.equal(sendsOf(usage_id), 3);
  await assertBilledExactly(account);
});

test('an answer lost, and Stripe away until its identifier window passed: the meter says it was recorded, so it is not sent again', async () => {
  const account = await meteredAccount(file);
  const { usage_id } = await use(account, 5);
  const pumper = pump();
  file.service.stripe.loseAnswers(METER_EVENTS, 2);
  await pumper.pumpOnce();
  await hoursPass(account, 24);
  await pumper.pumpOnce();
  assert.equal((await reportsOf(account))[0]!.status, 'sent');
  assert.equal(sendsOf(usage_id), 2, 'checked against the meter, not sent a third time');
  await assertBilledExactly(account);
});

test('a send that failed unseen, past the window: the meter says it was not recorded, so it is sent, once', async () => {
  const account = await meteredAccount(file);
  const { usage_id } = await use(account, 4);
  const pumper = pump();
  file.service.stripe.failNext(2, 500);
  await pumper.pumpOnce();
  await hoursPass(account, 24);
  await pumper.pumpOnce();
  assert.equal((await reportsOf(account))[0]!.status, 'sent');
  assert.equal(file.service.stripe.requests.filter((r) => r.path === METER_EVENTS && r.params.identifier === usage_id).length, 3);
  await assertBilledExactly(account);
});

test('past the window with another report of the same minute unsettled: it cannot be told, so it fails for an operator, never doubled', async () => {
  const account = await meteredAccount(file);
  await use(account, 2);
  await use(account, 3);
  const pumper = pump();
  file.service.stripe.loseAnswers(METER_EVENTS, 4);
  await pumper.pumpOnce();
  await hoursPass(account, 24);
  await pumper.pumpOnce();
  const reports = await reportsOf(account);
  assert.deepEqual(
    reports.map((r) => r.status),
    ['failed', 'failed'],
  );
  for (const report of reports) assert.match(report.last_error!, /past Stripe's identifier window, and 1 other report\(s\) .* not settled: cannot tell/);
  await assertBilledExactly(account);
});

test('two pumps at once send each report once', async () => {
  const account = await meteredAccount(file);
  const quantities = Array.from({ length: 30 }, (_, i) => (i % 5) + 1);
  for (const quantity of quantities) await use(account, quantity);
  file.service.stripe.setDelay(20);
  try {
    const drain = async (pumper: ReturnType<typeof pump>) => {
      while ((await pumper.pumpOnce()) === 'more');
    };
    await Promise.all([drain(pump()), drain(pump())]);
  } finally {
    file.service.stripe.setDelay(0);
  }
  const reports = await reportsOf(account);
  assert.equal(reports.length, quantities.length);
  assert.ok(reports.every((r) => r.status === 'sent' && r.attempts === 1));
  for (const report of reports) assert.equal(sendsOf(report.usage_id), 1, report.usage_id);
  await assertBilledExactly(account);
});

test('/metrics: reports pending and failed, and the age of the oldest pending use', async () => {
  const account = await meteredAccount(file);
  const { usage_id } = await use(account, 1);
  await sql`update usage_records set used_at = now() - interval '2 hours' where usage_id = ${usage_id}`.execute(file.database.db);
  const response = await fetch(`${file.service.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const text = await response.text();
  const sample = (metric: string) =>
    Number(
      text
        .split('\n')
        .find((line) => line.startsWith(`${metric} `))
        ?.slice(metric.length + 1),
    );
  const { rows } = await sql<{ status: string; n: number }>`select status, count(*)::int as n from usage_reports group by status`.execute(file.database.db);
  const count = (status: string) => rows.find((row) => row.status === status)?.n ?? 0;
  assert.equal(sample('stripe_inbox_usage_reports_pending'), count('pending'));
  assert.equal(sample('stripe_inbox_usage_reports_failed'), count('failed'));
  assert.ok(count('pending') >= 1);
  const age = sample('stripe_inbox_usage_reports_oldest_pending_age_seconds');
  assert.ok(age >= 7200 && age < 7300, `oldest pending age ${age}`);
  await pump().pumpOnce();
  await assertBilledExactly(account);
});

test("a use older than Stripe's 35 days is refused with its code: failed, listed for the operator with the reason, and replayed only on request", async () => {
  const account = await meteredAccount(file);
  const { usage_id } = await use(account, 2);
  await sql`update usage_records set used_at = now() - interval '36 days' where usage_id = ${usage_id}`.execute(file.database.db);
  await pump().pumpOnce();
  const listed = await file.service.call('GET', '/admin/api/usage-reports?status=failed&limit=500');
  assert.equal(listed.status, 200);
  const report = (listed.body.reports as Array<Record<string, unknown>>).find((r) => r.usage_id === usage_id);
  assert.equal(report?.status, 'failed');
  assert.equal(report?.last_error, 'Stripe refused the meter event: timestamp_too_far_in_past (timestamp)');
  assert.ok((listed.body.summary as { failed: number }).failed >= 1);

  const replay = await file.service.call('POST', '/admin/api/usage-reports/replay', { body: { ids: [usage_id] } });
  assert.deepEqual(replay.body, { replayed: [usage_id], skipped: [] });
  assert.equal((await reportsOf(account))[0]!.status, 'pending');
  assert.equal((await file.service.call('POST', '/admin/api/usage-reports/replay', { body: { ids: ['usage_1'] } })).status, 400);
  assert.equal(file.service.stripe.meterTotal(account.eventName, account.stripeCustomerId), 0, 'Stripe recorded none of it');
});

test('a usage-billed plan may grant no credits: its paid period is recorded, once, with 0; a plan without a meter may not', async () => {
  const account = await meteredAccount(file);
  const renewal = sampleEvent('invoice.paid', invoiceObject(account, { billingReason: 'subscription_cycle', status: 'paid' }));
  const [done] = await fulfilWith(file.database, handlersOf(billingModule), [renewal]);
  assert.deepEqual([done!.row.status, done!.row.last_error], ['processed', null]);
  const grants = await file.database.db.selectFrom('invoice_grants').select(['credits']).where('subscription_id', '=', account.subscriptionId).execute();
  assert.deepEqual(grants, [{ credits: 0 }]);
  assert.equal((await quotaOf(file.database, account.accountId)).granted, 0);

  const refused = await file.service.call('POST', '/admin/api/plans', {
    body: { id: `unmetered_${randomUUID().slice(0, 8)}`, name: 'Nothing', amount: 500, currency: 'chf', credits: 0, interval: 'month' },
  });
  assert.equal(refused.status, 400);
  assert.match(JSON.stringify(refused.body), /credits.*0 only for a usage-billed plan/);
});

test("GET /api/accounts/:id/usage and the accounts view: the account's usage newest first with its report's state, a page at a time; credit runs are not in it", async () => {
  const account = await meteredAccount(file);
  const ids: string[] = [];
  for (const quantity of [1, 2, 3]) ids.push(String((await use(account, quantity)).usage_id));
  const list = (query: string) => file.service.call('GET', `/api/accounts/${account.accountId}/usage${query}`);
  const shown = (body: Record<string, unknown>) => (body.usage as Array<Record<string, unknown>>).map((u) => [u.usage_id, u.quantity, u.report]);

  const first = await list('?limit=2');
  assert.equal(first.status, 200);
  assert.deepEqual(shown(first.body), [
    [ids[2], 3, 'pending'],
    [ids[1], 2, 'pending'],
  ]);
  const pumper = pump();
  while ((await pumper.pumpOnce()) !== 'idle');
  const second = await list(`?limit=2&cursor=${String(first.body.next_cursor)}`);
  assert.deepEqual([shown(second.body), second.body.next_cursor], [[[ids[0], 1, 'sent']], null]);
  // The accounts view shows the same usage, each with its report's state, and no credits used.
  const view = (await file.service.call('GET', `/admin/api/accounts/${account.accountId}`)).body;
  assert.deepEqual(
    (view.records as Array<{ kind: string; id: string; fields: Record<string, unknown> }>)
      .filter((r) => r.kind === 'usage')
      .map((r) => [r.id, r.fields.quantity, r.fields.report]),
    [
      [ids[2], 3, 'sent'],
      [ids[1], 2, 'sent'],
      [ids[0], 1, 'sent'],
    ],
  );
  assert.deepEqual([view.balance, view.runs], [{ granted: 0, used: 0, remaining: 0 }, []]);

  assert.deepEqual((await file.service.call('GET', `/api/accounts/${account.accountId}/runs`)).body.runs, []);
  assert.equal((await file.service.call('GET', `/api/accounts/acct_other_${randomUUID()}/usage?cursor=${ids[0]}`)).status, 400);
  assert.deepEqual((await file.service.call('GET', `/api/accounts/acct_other_${randomUUID()}/usage`)).body.usage, []);
});

test('a usage-billed plan whose Price bills another meter, or none, is refused (422) naming both: its runs would be reported and never billed', async () => {
  const suffix = randomUUID().slice(0, 8);
  const other = file.service.stripe.addMeter(`other_${suffix}`);
  const add = (price: string) =>
    file.service.call('POST', '/admin/api/plans', {
      body: {
        id: `metered_${price.slice(-8)}`,
        name: 'By use',
        amount: 5,
        currency: 'chf',
        credits: 0,
        interval: 'month',
        stripe_price_id: price,
        meter_event_name: `mine_${suffix}`,
      },
    });

  const wrong = await add(meteredPrice(file.service.stripe, other));
  assert.equal(wrong.status, 422);
  assert.match(String(wrong.body.error), new RegExp(`bills meter ${other}, whose event_name is other_${suffix}, not mine_${suffix}`));
  const none = await add(meteredPrice(file.service.stripe, null));
  assert.equal(none.status, 422);
  assert.match(String(none.body.error), /names no meter/);
});
