// Dashboard sessions live in Postgres (sql/0009): signing out ends the session at once, so the
// cookie, wherever it was copied, gets 401 from then on; other sessions go on. A session also ends
// when it expires or when ADMIN_TOKEN is rotated, and the table holds nothing a cookie can be
// made from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { serviceForFile, signIn, startTestService } from '../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

/** A dashboard request as the browser makes it: the cookie and, for a POST, the page's origin. */
async function asBrowser(cookie: string, method: string, path: string, accept = 'application/json') {
  const response = await fetch(file.service.url + path, {
    method,
    headers: { cookie, accept, origin: file.service.url, 'sec-fetch-site': 'same-origin' },
    redirect: 'manual',
  });
  await response.arrayBuffer();
  return response;
}

test('after signing out, the old cookie gets 401 at once, on the API and the page', async () => {
  const cookie = await signIn(file.service);
  assert.equal((await asBrowser(cookie, 'GET', '/admin/api/status')).status, 200);
  assert.equal((await asBrowser(cookie, 'GET', '/admin', 'text/html')).status, 200);

  const signOut = await asBrowser(cookie, 'POST', '/admin/logout');
  assert.equal(signOut.status, 303);
  assert.match(signOut.headers.get('set-cookie') ?? '', /^stripe_inbox_admin=;/, 'the browser drops the cookie');

  // A copy of the cookie (another tab's, or a stolen one) is no better than none.
  assert.equal((await asBrowser(cookie, 'GET', '/admin/api/status')).status, 401);
  assert.equal((await asBrowser(cookie, 'POST', '/admin/api/sweep')).status, 401);
  assert.equal((await asBrowser(cookie, 'GET', '/admin', 'text/html')).status, 401, 'the sign-in page again');
  assert.equal((await asBrowser(cookie, 'POST', '/admin/logout')).status, 303, 'signing out twice is harmless');
});

test('signing out ends that session only', async () => {
  const [laptop, phone] = [await signIn(file.service), await signIn(file.service)];
  assert.equal((await asBrowser(laptop, 'POST', '/admin/logout')).status, 303);
  assert.equal((await asBrowser(laptop, 'GET', '/admin/api/status')).status, 401);
  assert.equal((await asBrowser(phone, 'GET', '/admin/api/status')).status, 200);
});

test('a session ends when it expires', async () => {
  const cookie = await signIn(file.service);
  await sql`update admin_sessions set created_at = now() - interval '13 hours', expires_at = now() - interval '1 hour'
            where revoked_at is null`.execute(file.database.db);
  assert.equal((await asBrowser(cookie, 'GET', '/admin/api/status')).status, 401);
  const fresh = await signIn(file.service);
  const { rows } = await sql<{ expired: number }>`select count(*)::int as expired from admin_sessions where expires_at < now()`.execute(file.database.db);
  assert.deepEqual(rows, [{ expired: 0 }], 'a sign-in clears expired sessions');
  assert.equal((await asBrowser(fresh, 'GET', '/admin/api/status')).status, 200);
});

test('rotating ADMIN_TOKEN ends every session; the table holds no cookie', async () => {
  const cookie = await signIn(file.service);
  const id = cookie.split('=')[1]!;
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from admin_sessions where session_digest = ${id}`.execute(file.database.db);
  assert.deepEqual(rows, [{ n: 0 }]);

  const rotated = await startTestService(file.database, { env: { ROLE: 'web', ADMIN_TOKEN: 'rotated-admin-token-0123456789' } });
  try {
    const status = await fetch(`${rotated.url}/admin/api/status`, { headers: { cookie } });
    assert.equal(status.status, 401);
  } finally {
    await rotated.close();
  }
});
