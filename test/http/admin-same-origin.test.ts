// A state-changing admin request authenticated by the dashboard's cookie must come from the
// dashboard's own origin: Sec-Fetch-Site same-origin, and Origin, when sent, equal to the origin
// the browser sees (through the trusted proxy's X-Forwarded-Proto and X-Forwarded-Host). SameSite
// alone lets a sibling subdomain through. Reads are not affected, nor is the bearer token.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ADMIN_TOKEN, signIn, startTestService, type TestService } from '../support/service.js';

const CROSS_ORIGIN = {
  error:
    'cross-origin request refused: a signed-in dashboard action must come from the dashboard’s own page (Origin, Sec-Fetch-Site); scripts use the bearer token',
};

let database: TestDatabase;
let proxied: TestService;
let direct: TestService;
let cookie: string;

before(async () => {
  database = await createTestDatabase();
  const env = { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '0' };
  proxied = await startTestService(database, { env: { ...env, TRUST_PROXY: '1' } });
  direct = await startTestService(database, { env });
  cookie = await signIn(proxied);
});
after(async () => {
  await Promise.all([proxied.close(), direct.close()]);
  await database.close();
});

// The dashboard as the proxy in front sees it: https://admin.example.test.
const BEHIND_PROXY = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'admin.example.test' };
const DASHBOARD = 'https://admin.example.test';

async function send(method: string, path: string, headers: Record<string, string>, service = proxied) {
  const response = await fetch(service.url + path, { method, headers: { cookie, ...headers }, redirect: 'manual' });
  const text = await response.text();
  return { status: response.status, body: response.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as unknown) : text };
}

describe('with the session cookie, a POST', () => {
  test('from the dashboard’s own page goes through, whichever of the two headers the browser sends', async () => {
    const fromTheDashboard: Array<Record<string, string>> = [
      { origin: DASHBOARD, 'sec-fetch-site': 'same-origin' },
      { origin: DASHBOARD },
      { 'sec-fetch-site': 'same-origin' },
      // A form post under Referrer-Policy: no-referrer: the browser sends Origin: null.
      { origin: 'null', 'sec-fetch-site': 'same-origin' },
      { origin: 'HTTPS://Admin.Example.Test:443', 'sec-fetch-site': 'same-origin' },
    ];
    for (const headers of fromTheDashboard) {
      assert.equal((await send('POST', '/admin/api/sweep', { ...BEHIND_PROXY, ...headers })).status, 200, JSON.stringify(headers));
    }
    assert.equal((await send('POST', '/admin/api/sweep', { origin: direct.url }, direct)).status, 200, 'without a proxy: Host and http');
  });

  test('from anywhere else is a 403: another site, a sibling subdomain, another scheme or port, or no word at all', async () => {
    const fromElsewhere: Array<Record<string, string>> = [
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { origin: 'https://shop.example.test', 'sec-fetch-site': 'same-site' },
      { origin: 'https://shop.example.test' },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'none' },
      { origin: 'http://admin.example.test', 'sec-fetch-site': 'same-origin' },
      { origin: 'https://admin.example.test:8443' },
      { origin: 'null' },
      {},
    ];
    for (const headers of fromElsewhere) {
      const reply = await send('POST', '/admin/api/sweep', { ...BEHIND_PROXY, ...headers });
      assert.deepEqual([reply.status, reply.body], [403, CROSS_ORIGIN], JSON.stringify(headers));
    }
  });

  test('on every state-changing route and method, known or not, is refused before it runs', async () => {
    const evil = { ...BEHIND_PROXY, origin: 'https://evil.example', 'idempotency-key': 'k-cross-origin' };
    for (const [method, path] of [
      ['POST', '/admin/api/sweep'],
      ['POST', '/admin/api/events/evt_any/replay'],
      ['POST', '/admin/api/orders/ord_any/refund'],
      ['PUT', '/admin/api/status'],
      ['PATCH', '/admin/api/events/evt_any'],
      ['DELETE', '/admin/api/events/evt_any'],
    ]) {
      assert.equal((await send(method!, path!, evil)).status, 403, `${method} ${path}`);
    }
  });

  test('to sign out from another origin is refused, and the session goes on', async () => {
    const own = await signIn(proxied);
    const reply = await fetch(`${proxied.url}/admin/logout`, {
      method: 'POST',
      headers: { cookie: own, ...BEHIND_PROXY, origin: 'https://shop.example.test' },
      redirect: 'manual',
    });
    assert.equal(reply.status, 403);
    const status = await fetch(`${proxied.url}/admin/api/status`, { headers: { cookie: own } });
    assert.equal(status.status, 200);
  });

  test('without TRUST_PROXY, X-Forwarded-Host and -Proto do not make another origin the service’s own, and the 403 says what to set', async () => {
    const reply = await send('POST', '/admin/api/sweep', { ...BEHIND_PROXY, origin: DASHBOARD, 'sec-fetch-site': 'same-origin' }, direct);
    assert.equal(reply.status, 403);
    assert.match((reply.body as { error: string }).error, /^cross-origin request refused: .*set TRUST_PROXY to the number of proxies$/);
  });
});

test('reads with the cookie, and anything with the bearer token, are not affected', async () => {
  assert.equal((await send('GET', '/admin/api/status', { ...BEHIND_PROXY, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })).status, 200);
  const bearer = await fetch(`${proxied.url}/admin/api/sweep`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  });
  assert.equal(bearer.status, 200);
});
