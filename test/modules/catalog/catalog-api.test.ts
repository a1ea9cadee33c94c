// The catalog under /admin/api: packages and plans created without SQL, errors naming the field,
// what money and credits depend on never changing in place (the route and the table's trigger),
// and archiving: gone from what the app lists, refused to new checkouts, while what was sold
// keeps granting and renewing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { PERIOD_SECONDS, periodEvents } from '../../../src/modules/billing/sample-events.js';
import { emptyCatalogWarning } from '../../../src/modules/index.js';
import { finishedEvent, givenOrder, newAccountId, paidEvent, quotaOf } from '../../support/factories.js';
import { API_TOKEN, serviceForFile } from '../../support/service.js';
import { subscribedThroughApi } from '../../support/subscriptions.js';
import { waitFor } from '../../support/wait-for.js';

const file = serviceForFile();
const admin = (method: string, path: string, body?: unknown) => file.service.call(method, `/admin/api${path}`, body === undefined ? {} : { body });
const thesis = { id: 'thesis_check', name: 'Thesis check: 10 runs', amount: 1900, currency: 'CHF', credits: 10 };

describe('POST /admin/api/packages', () => {
  test('refuses what is not a package, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...thesis, id: 'Thesis Check' }, /^id: /],
      [{ ...thesis, amount: 0 }, /^amount: must be a positive integer/],
      [{ ...thesis, amount: 19.5 }, /^amount: /],
      [{ ...thesis, currency: 'xyz' }, /^currency: must be an ISO currency code Stripe accepts/],
      [{ ...thesis, credits: -1 }, /^credits: must be a positive integer/],
      // What a balance (a Postgres integer) can hold: 2147483647 credits granted once, then overflow.
      [{ ...thesis, credits: 2_147_483_647 }, /^credits: must be a positive integer of at most 1000000$/],
      [{ ...thesis, credits: 1_000_001 }, /^credits: must be a positive integer of at most 1000000$/],
      [{ ...thesis, name: ' ' }, /^name: /],
      [{ ...thesis, stripe_price_id: 'prod_x' }, /^stripe_price_id: /],
      [{ ...thesis, interval: 'month' }, /interval/],
    ];
    for (const [body, error] of cases) {
      const reply = await admin('POST', '/packages', body);
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.match(reply.body.error as string, error);
    }
  });

  test('a NUL character in the name is a 400 naming it, and nothing is written (Postgres text cannot store one)', async () => {
    const reply = await admin('POST', '/packages', { ...thesis, id: 'nul_name', name: 'Thesis\u0000check' });
    assert.equal(reply.status, 400);
    assert.match(reply.body.error as string, /^name: must not contain a NUL character/);
    assert.ok(!((await admin('GET', '/packages')).body as unknown as Array<{ id: string }>).some((p) => p.id === 'nul_name'));
    await admin('POST', '/packages', { ...thesis, id: 'nul_rename' });
    const renamed = await admin('PATCH', '/packages/nul_rename', { name: 'Renamed\u0000' });
    assert.equal(renamed.status, 400);
    assert.match(renamed.body.error as string, /^name: must not contain a NUL character/);
    const plan = await admin('POST', '/plans', { ...thesis, id: 'nul_plan', name: '\u0000', interval: 'month' });
    assert.equal(plan.status, 400);
    assert.match(plan.body.error as string, /^name: must not contain a NUL character/);
  });

  test('needs the admin token', async () => {
    assert.equal((await file.service.call('POST', '/admin/api/packages', { body: thesis, token: API_TOKEN })).status, 401);
    assert.equal((await file.service.call('GET', '/admin/api/plans', { token: null })).status, 401);
  });

  test('a package that names Stripe Features shows them, keeps them, and has Checkout make a customer; one without does not', async () => {
    const created = await admin('POST', '/packages', { ...thesis, id: 'with_features', features: ['export', 'reports'] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.features, ['export', 'reports']);
    assert.equal((await admin('PATCH', '/packages/with_features', { features: [] })).status, 409);
    const refused = await admin('POST', '/packages', { ...thesis, id: 'twice', features: ['export', 'export'] });
    assert.deepEqual([refused.status, refused.body.error], [400, 'features: must name each feature once']);
    const asked = async (packageId: string) => {
      const checkout = await file.service.call('POST', '/api/checkout', { body: { package_id: packageId, account_id: newAccountId() } });
      assert.equal(checkout.status, 201);
      const request = file.service.stripe.requests.findLast(
        (r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === checkout.body.order_id,
      );
      return request!.params.customer_creation;
    };
    assert.equal(await asked('with_features'), 'always');
    assert.equal(await asked('starter'), undefined);
  });

  test('a package created through the API is listed, bought and granted', async () => {
    const created = await admin('POST', '/packages', thesis);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body, {
      id: 'thesis_check',
      name: 'Thesis check: 10 runs',
      amount: 1900,
      currency: 'chf',
      credits: 10,
      active: true,
      stripe_price_id: null,
      features: [],
    });
    assert.equal((await admin('POST', '/packages', thesis)).status, 409, 'an id is taken once');
    const listed = (await file.service.call('GET', '/api/packages')).body as unknown as Array<{ id: string }>;
    assert.ok(listed.some((p) => p.id === 'thesis_check'));

    const accountId = newAccountId();
    const checkout = await file.service.call('POST', '/api/checkout', { body: { package_id: 'thesis_check', account_id: accountId } });
    assert.equal(checkout.status, 201);
    const order = await givenOrder(file.database, { packageId: 'thesis_check', accountId });
    const event = paidEvent(order);
    assert.equal((await file.service.deliver(event)).status, 200);
    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    assert.equal((await quotaOf(file.database, accountId)).granted, 10);
  });
});

describe('what money and credits depend on never changes in place', () => {
  test('PATCH changes the name; amount, currency, credits and the Price answer 409', async () => {
    await admin('POST', '/packages', { ...thesis, id: 'fixed_price' });
    const renamed = await admin('PATCH', '/packages/fixed_price', { name: 'Renamed' });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'Renamed');
    for (const body of [{ amount: 2900 }, { currency: 'eur' }, { credits: 20 }, { stripe_price_id: 'price_x' }]) {
      const reply = await admin('PATCH', '/packages/fixed_price', body);
      assert.equal(reply.status, 409, JSON.stringify(body));
      assert.match(reply.body.error as string, /create a new one and archive this/);
    }
    assert.equal((await admin('PATCH', '/packages/fixed_price', { active: 'no' })).status, 400);
    assert.equal((await admin('PATCH', '/packages/no_such', { active: false })).status, 404);
    assert.equal((await admin('GET', '/packages')).body instanceof Array, true);
  });

  test('Postgres refuses a changed price too (restrict_violation), for packages and plans', async () => {
    await assert.rejects(sql`update packages set amount = amount + 1 where package_id = 'starter'`.execute(file.database.db), { code: '23001' });
    await assert.rejects(sql`update plans set interval = 'year' where plan_id = 'pro_monthly'`.execute(file.database.db), { code: '23001' });
    await sql`update packages set name = name where package_id = 'starter'`.execute(file.database.db);
  });
});

describe('archiving', () => {
  test('an archived package leaves GET /api/packages and refuses new checkouts; its paid-later order still grants', async () => {
    await admin('POST', '/packages', { ...thesis, id: 'retired' });
    const pending = await givenOrder(file.database, { packageId: 'retired' });
    const archived = await admin('PATCH', '/packages/retired', { active: false });
    assert.deepEqual([archived.status, archived.body.active], [200, false]);
    const listed = (await file.service.call('GET', '/api/packages')).body as unknown as Array<{ id: string }>;
    assert.ok(!listed.some((p) => p.id === 'retired'));
    assert.ok(((await admin('GET', '/packages')).body as unknown as Array<{ id: string; active: boolean }>).some((p) => p.id === 'retired' && !p.active));

    const refused = await file.service.call('POST', '/api/checkout', { body: { package_id: 'retired', account_id: newAccountId() } });
    assert.equal(refused.status, 409);
    assert.match(refused.body.error as string, /archived/);
    assert.equal((await file.service.call('POST', '/api/checkout', { body: { package_id: 'never_was', account_id: newAccountId() } })).status, 400);

    const event = paidEvent(pending);
    assert.equal((await file.service.deliver(event)).status, 200);
    assert.equal((await finishedEvent(file.database, event.id)).status, 'processed');
    assert.equal((await quotaOf(file.database, pending.account_id)).granted, 10);
  });

  test('a plan: created with its period, archived, refused to new subscriptions, while a subscription to it renews', async () => {
    const plan = { id: 'fortnightly', name: 'Every two weeks', amount: 900, currency: 'eur', credits: 20, interval: 'week', interval_count: 2 };
    assert.match((await admin('POST', '/plans', { ...plan, interval_count: 200 })).body.error as string, /^interval_count: must be at most 156/);
    assert.match((await admin('POST', '/plans', { ...plan, interval: 'fortnight' })).body.error as string, /^interval: /);
    // A period's credits are bounded as a package's are: what a balance can hold.
    for (const credits of [1_000_001, 2_147_483_647]) {
      assert.match((await admin('POST', '/plans', { ...plan, credits })).body.error as string, /^credits: must be a whole number of at most 1000000$/);
    }
    const created = await admin('POST', '/plans', plan);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body, { ...plan, active: true, stripe_price_id: null, features: [] });

    const subscription = await subscribedThroughApi(file, { plan });
    const session = file.service.stripe.requests.findLast(
      (r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === subscription.subscriptionId,
    );
    assert.deepEqual((session!.params.line_items as Array<{ price_data: { recurring: unknown } }>)[0]!.price_data.recurring, {
      interval: 'week',
      interval_count: '2',
    });
    assert.equal((await admin('PATCH', '/plans/fortnightly', { active: false })).status, 200);
    const plans = (await file.service.call('GET', '/api/plans')).body as unknown as Array<{ id: string }>;
    assert.ok(!plans.some((p) => p.id === 'fortnightly'));
    assert.equal((await file.service.call('POST', '/api/subscriptions', { body: { plan_id: 'fortnightly', account_id: newAccountId() } })).status, 409);

    const start = Math.floor(Date.now() / 1000);
    for (const event of periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS })) {
      assert.equal((await file.service.deliver(event)).status, 200);
    }
    await waitFor('the period of the archived plan granted', async () => (await quotaOf(file.database, subscription.accountId)).granted === 20);
  });
});

test('with nothing active on sale, the start-up check says so (main.ts logs it in production)', async () => {
  assert.equal(await emptyCatalogWarning(file.database.db), undefined);
  await sql`update packages set active = false`.execute(file.database.db);
  await sql`update plans set active = false`.execute(file.database.db);
  assert.match((await emptyCatalogWarning(file.database.db))!, /no active package or plan: every checkout will be refused; add one with npm run catalog/);
});
