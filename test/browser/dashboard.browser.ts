// The ops dashboard in a real browser (Debian's Chromium driven by playwright-core): sign in with
// the admin token (never in a URL), watch counts change as events arrive, replay a failed event
// once its cause is fixed and watch it turn processed. Leaves a screenshot at
// artifacts/dashboard.png. Needs /usr/bin/chromium: `npm run test:browser` (CI installs it).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { checkoutSession, sampleEvent } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { ADMIN_TOKEN, startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

let database: TestDatabase;
let service: TestService;
let browser: Browser;
let page: Page;

before(async () => {
  database = await createTestDatabase();
  service = await startTestService(database);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
});
after(async () => {
  await browser?.close();
  await service.close();
  await database.close();
});

const card = (status: string) => page.locator(`.card[data-status="${status}"] b`);
// The page refreshes itself every 5 s.
const cardShows = (status: string, count: string) =>
  waitFor(`the ${status} card to show ${count}`, async () => (await card(status).textContent()) === count, { timeoutMs: 15_000, intervalMs: 200 });

test('sign in, see events arrive, replay a fixed failure, sign out', async () => {
  const unauthenticated = await page.goto(`${service.url}/admin`);
  assert.equal(unauthenticated?.status(), 401);
  await page.fill('#token', 'not-the-token-at-all');
  await page.click('button[type=submit]');
  await page.locator('.error').waitFor();

  await page.fill('#token', ADMIN_TOKEN);
  await page.click('button[type=submit]');
  await card('processed').waitFor();
  assert.ok(!page.url().includes(ADMIN_TOKEN), 'the token never appears in a URL');
  assert.equal(await card('processed').textContent(), '0');

  // One payment that fulfils, one for an order that does not exist yet: a dead letter.
  const paid = paidEvent(await givenOrder(database));
  await service.deliver(paid);
  const orphan = sampleEvent('checkout.session.completed', checkoutSession({ orderId: 'ord_created_late', sessionId: 'cs_test_ord_created_late', amount: 4900, currency: 'chf' }));
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

  // Its detail: the payload as stored, and the order it names.
  await page.click(`#results tr[data-event-id="${orphan.id}"] button.event`);
  await page.locator('#detail[open]').waitFor();
  assert.match((await page.locator('#detail-payload').textContent()) ?? '', new RegExp(orphan.id));
  assert.match((await page.locator('#detail-records').textContent()) ?? '', /order ord_created_late: status paid, account_id acct_late/);
  await page.screenshot({ path: 'artifacts/dashboard-detail.png' });
  await page.click('#detail button.close');
  await page.locator('#detail[open]').waitFor({ state: 'detached' });

  // A request the server refuses is shown on the page with its reason, not lost in the console.
  await page.fill('#q', 'ord created late');
  await page.click('#search button');
  await page.locator('#notice').filter({ hasText: /^GET \/search\?q=.* answered 400: .*no spaces/ }).waitFor();

  await mkdir('artifacts', { recursive: true });
  await page.screenshot({ path: 'artifacts/dashboard.png', fullPage: true });

  await page.click('header button[type=submit]');
  await page.locator('#token').waitFor();
  const after = await page.request.get(`${service.url}/admin/api/status`);
  assert.equal(after.status(), 401, 'signed out: the API refuses again');
});
