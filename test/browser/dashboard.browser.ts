// The ops dashboard in a real browser (Debian's Chromium driven by playwright-core): sign in with
// the admin token (never in a URL), watch counts change as events arrive, replay a failed event
// once its cause is fixed and watch it turn processed, see the notification its outcome sent to
// the app, replay a notification the app refused and watch it turn delivered, manage the catalog
// (prices shown as money), look an account up. Leaves screenshots in artifacts/. Needs /usr/bin/chromium: `npm run test:browser` (CI installs it).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { checkoutSession, sampleEvent } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, newAccountId, paidEvent } from '../support/factories.js';
import { meteredPrice } from '../support/metered.js';
import { notifyingTo, receivedWhere, startNotificationReceiver, type NotificationReceiver } from '../support/notification-receiver.js';
import { ADMIN_TOKEN, API_TOKEN, startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

let database: TestDatabase;
let receiver: NotificationReceiver;
let service: TestService;
let browser: Browser;
let page: Page;

before(async () => {
  database = await createTestDatabase();
  receiver = await startNotificationReceiver();
  // One attempt per delivery: a refused notification is a dead letter at once.
  service = await startTestService(database, { env: notifyingTo(receiver, { APP_WEBHOOK_MAX_ATTEMPTS: '1' }) });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await newPage();
});
after(async () => {
  await browser?.close();
  await service.close();
  await receiver.close();
  await database.close();
});

const newPage = () => browser.newPage({ viewport: { width: 1200, height: 1000 } });
const card = (status: string) => page.locator(`.card[data-status="${status}"] b`);
// The page refreshes itself every 5 s.
const cardShows = (status: string, count: string) =>
  waitFor(`the ${status} card to show ${count}`, async () => (await card(status).textContent()) === count, { timeoutMs: 15_000, intervalMs: 200 });
const REFRESHED = { timeout: 15_000 };

async function submitToken(token: string) {
  await page.fill('#token', token);
  await page.click('button[type=submit]');
}

/** The notification `order` made, once the receiver has been sent it (whatever it answered). */
async function notificationOf(order: { order_id: string }) {
  const [told] = await waitFor(
    `the notification of ${order.order_id}`,
    receivedWhere(receiver, (r) => r.data.order_id === order.order_id),
  );
  return told!.id;
}

/** Once the service has recorded the delivery's outcome (after the receiver answered). */
const deliveryIs = (notificationId: string, status: string) =>
  waitFor(`${notificationId} to be ${status}`, async () => {
    const delivery = await database.db.selectFrom('notification_deliveries').select('status').where('notification_id', '=', notificationId).executeTakeFirst();
    return delivery?.status === status;
  });

test('sign in, see events arrive, replay a fixed failure, sign out', async () => {
  const unauthenticated = await page.goto(`${service.url}/admin`);
  assert.equal(unauthenticated?.status(), 401);
  await submitToken('not-the-token-at-all');
  await page.locator('.error').waitFor();

  await submitToken(ADMIN_TOKEN);
  await card('processed').waitFor();
  assert.ok(!page.url().includes(ADMIN_TOKEN), 'the token never appears in a URL');
  assert.equal(await card('processed').textContent(), '0');

  // One payment that fulfils, one for an order that does not exist yet: a dead letter.
  const paid = paidEvent(await givenOrder(database));
  await service.deliver(paid);
  const orphan = sampleEvent(
    'checkout.session.completed',
    checkoutSession({ orderId: 'ord_created_late', sessionId: 'cs_test_ord_created_late', amount: 4900, currency: 'chf' }),
  );
  await service.deliver(orphan);
  await cardShows('processed', '1');
  await cardShows('failed', '1');
  const failedRow = page.locator(`#failed tr[data-event-id="${orphan.id}"]`);
  assert.match((await failedRow.locator('td.error').textContent()) ?? '', /unknown order "ord_created_late"/);

  // The cause is fixed (the order exists now, with the session it opened); replay from the dashboard.
  await givenOrder(database, { orderId: 'ord_created_late', accountId: 'acct_late' });
  await failedRow.locator('button.replay').click();
  await cardShows('processed', '2');
  assert.equal(await card('failed').textContent(), '0');

  // Search finds the event by its order id.
  await page.fill('#q', 'ord_created_late');
  await page.click('#search button');
  await page.locator(`#results tr[data-event-id="${orphan.id}"] td.status`).filter({ hasText: 'processed' }).waitFor();
  assert.equal(await page.locator('#chart polyline').count(), 3);
  // The chart's scale is told beside its legend, whole, not squeezed into the stretched chart.
  assert.match((await page.locator('#chart-max').textContent()) ?? '', /^top of the chart: \d+\/min$/);
  assert.equal(await page.locator('#chart text').count(), 0);

  // Its detail: the payload as stored, the order it names, and the order.paid its grant told the app.
  const told = await notificationOf({ order_id: 'ord_created_late' });
  await deliveryIs(told, 'delivered');
  await page.click(`#results tr[data-event-id="${orphan.id}"] button.event`);
  await page.locator('#detail[open]').waitFor();
  assert.match((await page.locator('#detail-payload').textContent()) ?? '', new RegExp(orphan.id));
  assert.match((await page.locator('#detail-records').textContent()) ?? '', /order ord_created_late: status paid, account_id acct_late/);
  const notification = page.locator(`#detail-notifications tr[data-notification-id="${told}"]`);
  assert.equal(await page.locator('#detail-notifications tr[data-notification-id]').count(), 1);
  assert.equal(await notification.locator('td').nth(1).textContent(), 'order.paid');
  const delivery = (await notification.locator('.delivery[data-status="delivered"]').textContent()) ?? '';
  assert.ok(delivery.startsWith('delivered ') && delivery.includes(` · 1 attempt · ${receiver.url}`), delivery);
  assert.match((await notification.locator('ol.attempts li').textContent()) ?? '', / · HTTP 204 · \d+ ms$/);
  await page.screenshot({ path: 'artifacts/dashboard-detail.png' });
  await page.click('#detail button.close');
  await page.locator('#detail[open]').waitFor({ state: 'detached' });

  // A request the server refuses is shown on the page with its reason, not lost in the console.
  await page.fill('#q', 'ord created late');
  await page.click('#search button');
  await page
    .locator('#notice')
    .filter({ hasText: /^GET \/search\?q=.* answered 400: .*no spaces/ })
    .waitFor();

  await mkdir('artifacts', { recursive: true });
  await page.screenshot({ path: 'artifacts/dashboard.png', fullPage: true });

  await page.click('header button[type=submit]');
  await page.locator('#token').waitFor();
  const after = await page.request.get(`${service.url}/admin/api/status`);
  assert.equal(after.status(), 401, 'signed out: the API refuses again');
});

test('a notification the app refused is listed as failed, replayed from the dashboard, and shows as delivered', async () => {
  // Signed out, whatever the first test left.
  page = await newPage();
  await page.goto(`${service.url}/admin`);
  await submitToken(ADMIN_TOKEN);
  await card('processed').waitFor();
  const endpoint = page.locator(`#notification-facts span[data-endpoint="${receiver.url}"]`);
  // The first test's notifications are all delivered before the app starts refusing.
  const allDelivered = page.locator('#notification-facts').filter({ hasText: /^notifications: all delivered$/ });
  await allDelivered.waitFor(REFRESHED);

  receiver.answer = () => ({ status: 500 });
  const order = await givenOrder(database);
  await service.deliver(paidEvent(order));
  const told = await notificationOf(order);
  const row = page.locator(`#notifications tr[data-notification-id="${told}"]`);
  await row.locator('.delivery[data-status="failed"]').waitFor(REFRESHED);
  assert.match((await row.locator('ol.attempts li.error').textContent()) ?? '', / · HTTP 500 · \d+ ms$/);
  await endpoint.filter({ hasText: 'pending 0, failed 1, oldest pending none' }).waitFor(REFRESHED);
  await page.screenshot({ path: 'artifacts/dashboard-notifications.png', fullPage: true });

  // The app answers again: replay from the list, then find it among the delivered.
  receiver.answer = () => ({ status: 204 });
  await row.locator('button.replay').click();
  await page.locator('#notification-replay-result').filter({ hasText: 'replayed 1, skipped 0' }).waitFor();
  await page.selectOption('#notification-status', 'delivered');
  await row.locator('.delivery[data-status="delivered"]').waitFor(REFRESHED);
  assert.deepEqual(
    (await row.locator('ol.attempts li').allTextContents()).map((a) => a.match(/HTTP \d+/)?.[0]),
    ['HTTP 500', 'HTTP 204'],
  );
  await allDelivered.waitFor(REFRESHED);

  // Nothing failed is left: replaying every failed one replays none.
  await page.click('#replay-failed');
  await page.locator('#notification-replay-result').filter({ hasText: 'replayed 0, skipped 0' }).waitFor();
});

test('the catalog page: add a package and a plan, see a refusal naming the field, archive and put back', async () => {
  page = await newPage();
  await page.goto(`${service.url}/admin`);
  await submitToken(ADMIN_TOKEN);
  await page.locator('#catalog tr[data-catalog-id="starter"]').waitFor();
  // Prices as money, in each currency's own minor unit.
  assert.equal(await page.locator('#catalog tr[data-catalog-id="starter"] td.money').textContent(), 'CHF 49.00');
  // A package has no period: the add form shows a plan's fields only for a plan.
  const planFields = ['#catalog-interval', '#catalog-interval-count', '#catalog-meter'];
  for (const field of planFields) assert.equal(await page.locator(field).isVisible(), false, `${field} hidden for a package`);

  const fill = async (fields: Record<string, string>) => {
    for (const [id, value] of Object.entries(fields)) await page.fill(`#catalog-${id}`, value);
    await page.click('#catalog-add button[type=submit]');
  };
  await fill({ id: 'thesis_check', name: 'Thesis check: 10 runs', amount: '1900', currency: 'xyz', credits: '10' });
  await page
    .locator('#notice')
    .filter({ hasText: /POST \/packages answered 400: currency: / })
    .waitFor();
  await page.fill('#catalog-currency', 'chf');
  await page.click('#catalog-add button[type=submit]');
  const added = page.locator('#catalog tr[data-catalog-id="thesis_check"]');
  await added.locator('td.status').filter({ hasText: 'on sale' }).waitFor();

  await fill({ id: 'yen_pack', name: 'Yen pack', amount: '4900', currency: 'jpy', credits: '10' });
  await page
    .locator('#catalog tr[data-catalog-id="yen_pack"] td.money')
    .filter({ hasText: /^JPY 4,900$/ })
    .waitFor();

  await page.selectOption('#catalog-kind', 'plans');
  for (const field of planFields) assert.equal(await page.locator(field).isVisible(), true, `${field} shown for a plan`);
  await page.selectOption('#catalog-interval', 'week');
  await fill({ id: 'weekly', name: 'Weekly', amount: '500', currency: 'eur', credits: '5', 'interval-count': '2' });
  await page.locator('#catalog tr[data-catalog-id="weekly"]').filter({ hasText: '2 week' }).waitFor();
  // A usage-billed plan: no credits, its meter and metered Price, and the features it grants.
  const meter = 'api_calls_dashboard';
  const price = meteredPrice(service.stripe, service.stripe.addMeter(meter));
  await page.selectOption('#catalog-kind', 'plans');
  await fill({ id: 'by_use', name: 'By use', amount: '5', currency: 'chf', credits: '0', meter, price, features: 'pro_export, api' });
  await page.locator('#catalog tr[data-catalog-id="by_use"]').filter({ hasText: 'pro_export, api' }).waitFor();
  const byUse = await database.db
    .selectFrom('plans')
    .select(['credits', 'meter_event_name', 'features', 'stripe_price_id'])
    .where('plan_id', '=', 'by_use')
    .executeTakeFirst();
  assert.deepEqual(byUse, { credits: 0, meter_event_name: meter, features: ['pro_export', 'api'], stripe_price_id: price });

  await added.locator('button.archive').click();
  await added.locator('td.status').filter({ hasText: 'archived' }).waitFor();
  const listed = await page.request.get(`${service.url}/api/packages`, { headers: { authorization: `Bearer ${service.config.apiToken}` } });
  assert.ok(!((await listed.json()) as Array<{ id: string }>).some((p) => p.id === 'thesis_check'), 'archived: not on sale');
  await page.screenshot({ path: 'artifacts/dashboard-catalog.png', fullPage: true });
  await added.locator('button.restore').click();
  await added.locator('td.status').filter({ hasText: 'on sale' }).waitFor();
});

test('the accounts view: find an account, see its balance, its grant with the money paid, its run, and its notification with its sequence', async () => {
  page = await newPage();
  await page.goto(`${service.url}/admin`);
  await submitToken(ADMIN_TOKEN);
  await card('processed').waitFor();
  const accountId = newAccountId();
  const order = await givenOrder(database, { accountId });
  const paid = paidEvent(order);
  await service.deliver(paid);
  assert.equal((await finishedEvent(database, paid.id)).status, 'processed');
  const run = await service.call('POST', `/api/accounts/${accountId}/runs`, { token: API_TOKEN });
  assert.equal(run.status, 201);

  await page.fill('#account-id', accountId);
  await page.click('#account-search button');
  await page.locator('#account-balance b[data-balance="remaining"]').filter({ hasText: /^39$/ }).waitFor();
  assert.equal(await page.locator('#account-balance b[data-balance="granted"]').textContent(), '40');
  assert.equal(await page.locator('#account-balance b[data-balance="used"]').textContent(), '1');
  const grant = page.locator(`#account-grants tr[data-grant-id="${order.order_id}"] td`);
  assert.deepEqual((await grant.allTextContents()).slice(0, 4), [`order ${order.order_id}`, '40', '0', 'CHF 49.00']);
  assert.equal(await grant.nth(5).textContent(), paid.id);
  assert.deepEqual(
    await page
      .locator(`#account-runs tr[data-run-id="${run.body.run_id as string}"] td`)
      .nth(1)
      .textContent(),
    '1',
  );
  const notification = page.locator('#account-notifications tr[data-notification-id]');
  assert.equal(await notification.count(), 1);
  assert.equal(await notification.locator('td.sequence').textContent(), '1');
  assert.equal(await notification.locator('td').nth(2).textContent(), 'order.paid');
  await mkdir('artifacts', { recursive: true });
  await page.screenshot({ path: 'artifacts/dashboard-account.png', fullPage: true });

  // What is typed is text, never markup: the refusal names the field, and nothing is made of it.
  await page.fill('#account-id', '<img src=x onerror=alert(1)>');
  await page.click('#account-search button');
  await page
    .locator('#notice')
    .filter({ hasText: /^GET \/accounts\/%3Cimg.* answered 400: account_id: must be an id/ })
    .waitFor();
  assert.equal(await page.locator('img').count(), 0);
});
