// What a developer's browser meets with `npm start` and no Stripe key: the url POST /api/checkout
// and POST /api/subscriptions return opens the offline stand-in's Checkout page, which names the
// command that completes that very session; the default return URLs land on pages of the service.
// Production serves none of these pages: its return URLs are the app's own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { newAccountId } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

let database: TestDatabase;
before(async () => (database = await createTestDatabase()));
after(() => database.close());

/** The service's answer to a browser's GET of `url`, on the service itself whatever host and port the URL names. */
async function open(service: TestService, url: string): Promise<{ status: number; type: string; text: string }> {
  const { pathname, search } = new URL(url);
  const response = await fetch(service.url + pathname + search);
  return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
}

describe('in development', () => {
  let service: TestService;
  before(async () => (service = await startTestService(database, { env: { NODE_ENV: 'development' } })));
  after(() => service.close());

  test('a package checkout’s url opens a page naming the command that pays that order, and its return pages exist', async () => {
    const reply = await service.call('POST', '/api/checkout', { body: { package_id: 'starter', account_id: newAccountId() } });
    assert.equal(reply.status, 201);
    const page = await fetch(reply.body.url as string);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const text = await page.text();
    assert.ok(text.includes(`npm run send-event -- checkout.session.completed --order ${reply.body.order_id as string}`), text);
    assert.ok(text.includes('CHF\u00a049.00'), 'the price as a buyer reads it (Intl puts a no-break space after the code)');

    const session = service.stripe.sessions.get(reply.body.checkout_session_id as string)!;
    const success = await open(service, (session.success_url as string).replace('{CHECKOUT_SESSION_ID}', session.id as string));
    assert.deepEqual([success.status, success.type.split(';')[0]], [200, 'text/html']);
    assert.ok(success.text.includes(session.id as string), 'the page names the session Stripe sent back');
    assert.match(success.text, /checkout\.session\.completed/);
    const cancel = await open(service, session.cancel_url as string);
    assert.deepEqual([cancel.status, cancel.type.split(';')[0]], [200, 'text/html']);
  });

  test('the page reads an amount as Stripe means it: ISK keeps two decimals in the API (490000 is ISK 4,900)', async () => {
    const id = `isk_${newAccountId().slice(-8)}`;
    const added = await service.call('POST', '/admin/api/packages', { body: { id, name: 'Króna pack', amount: 490000, currency: 'isk', credits: 10 } });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const reply = await service.call('POST', '/api/checkout', { body: { package_id: id, account_id: newAccountId() } });
    const text = await (await fetch(reply.body.url as string)).text();
    assert.match(text, /ISK\u00a04,900(?!\d)/, text);
  });

  test('a subscription checkout’s url names the command that sends its first period', async () => {
    const reply = await service.call('POST', '/api/subscriptions', { body: { plan_id: 'pro_monthly', account_id: newAccountId() } });
    assert.equal(reply.status, 201);
    const text = await (await fetch(reply.body.url as string)).text();
    assert.ok(text.includes(`npm run send-event -- --subscription ${reply.body.subscription_id as string}`), text);
  });

  test('what the pages echo is text, never markup', async () => {
    const success = await open(service, 'http://localhost/checkout/success?session_id=<script>alert(1)</script>');
    assert.ok(!success.text.includes('<script>'));
    assert.ok(success.text.includes('&lt;script&gt;'));
  });

  test('a session the stand-in does not hold (npm start restarted) is a page saying so', async () => {
    const page = await fetch(`${service.stripe.url}/c/pay/cs_test_forgotten`);
    assert.equal(page.status, 404);
    assert.match(await page.text(), /restart of <code>npm start<\/code> forgets them/);
  });
});

test('production serves no development page', async () => {
  const service = await startTestService(database, {
    env: {
      NODE_ENV: 'production',
      CHECKOUT_SUCCESS_URL: 'https://shop.example.test/thanks',
      CHECKOUT_CANCEL_URL: 'https://shop.example.test/pricing',
      APP_WEBHOOK_URL: '',
    },
  });
  try {
    for (const path of ['/checkout/success?session_id=cs_test_1', '/checkout/cancel'])
      assert.equal((await open(service, `http://localhost${path}`)).status, 404, path);
    assert.equal(
      (await fetch(`${service.url}/dev/notifications`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status,
      404,
    );
  } finally {
    await service.close();
  }
});
