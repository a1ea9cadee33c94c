// The admin API is never reachable without ADMIN_TOKEN: every /admin path,
// known or not, any method, answers 401, never a 404 that would map the routes. Tokens are
// compared as SHA-256 digests with timingSafeEqual (src/http/auth.ts), so a guess of any length
// or content is a plain 401, never an exception. Timing itself is not measured here: on a shared
// machine that would be a flaky test, and equal-length digests make it hold by construction.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';

import { ADMIN_TOKEN, API_TOKEN, serviceForFile } from '../support/service.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_501);

const file = serviceForFile({ env: { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '1000000' } });

async function request(method: string, path: string, authorization?: string) {
  const response = await fetch(file.service.url + path, { method, headers: authorization === undefined ? {} : { authorization } });
  const text = await response.text();
  return { status: response.status, text, wwwAuthenticate: response.headers.get('www-authenticate') };
}

const ADMIN_PATHS = [
  '/admin',
  '/admin/',
  '/admin/anything',
  '/admin/api',
  '/admin/api/nope',
  '/admin/api/status/',
  '/admin/api/events/evt_x/unknown',
  '/admin/api/orders/ord_x/refund',
  '/ADMIN/api/status',
  '/admin/../admin/api/status',
  '/admin/api/events/%E0%A4%A',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const WRONG = [
  undefined,
  `Bearer ${API_TOKEN}`,
  'Bearer wrong',
  `Bearer ${ADMIN_TOKEN}x`,
  `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
  ADMIN_TOKEN,
  `Basic ${ADMIN_TOKEN}`,
  'Bearer ',
];

describe('without the admin token', () => {
  test('every /admin path, known or not, answers 401 to every method and every wrong credential', async () => {
    for (const path of ADMIN_PATHS) {
      for (const method of METHODS) {
        for (const authorization of WRONG) {
          const reply = await request(method, path, authorization);
          const what = `${method} ${path} with ${String(authorization)}`;
          assert.equal(reply.status, 401, what);
          assert.deepEqual(JSON.parse(reply.text), { error: 'missing or wrong bearer token for admin' }, what);
          assert.equal(reply.wwwAuthenticate, 'Bearer realm="admin"', what);
        }
      }
      assert.equal((await request('HEAD', path)).status, 401, `HEAD ${path}`);
    }
  });

  test('any Authorization header at all is a 401, whatever its length or content', async () => {
    const headerUnit = fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c));
    const nearMiss = fc.oneof(
      fc.string({ unit: headerUnit, maxLength: 200 }),
      fc.string({ unit: headerUnit, minLength: 1, maxLength: 10_000, size: 'max' }).map((s) => `Bearer ${s}`),
      // One character changed, dropped or added: the guesses a timing attack would make.
      fc.tuple(fc.nat(), fc.integer({ min: 0x21, max: 0x7e })).map(([at, c]) => {
        const i = at % ADMIN_TOKEN.length;
        return `Bearer ${ADMIN_TOKEN.slice(0, i)}${String.fromCharCode(c)}${ADMIN_TOKEN.slice(i + 1)}`;
      }),
      fc.nat({ max: ADMIN_TOKEN.length - 1 }).map((n) => `Bearer ${ADMIN_TOKEN.slice(0, n)}`),
      fc.string({ unit: headerUnit, minLength: 1, maxLength: 20 }).map((s) => `Bearer ${ADMIN_TOKEN}${s}`),
    );
    await fc.assert(
      fc.asyncProperty(
        nearMiss.filter((h) => !new RegExp(`^bearer +${ADMIN_TOKEN}$`, 'i').test(h.trim())),
        async (authorization) => {
          const reply = await request('GET', '/admin/api/status', authorization);
          assert.equal(reply.status, 401, reply.text);
        },
      ),
      { seed: SEED, numRuns: 150 },
    );
    assert.equal((await request('GET', '/admin/api/status', `Bearer ${ADMIN_TOKEN}`)).status, 200);
  });
});

describe('with the admin token', () => {
  test('the scheme name is matched whatever its case, and may be followed by several spaces (RFC 7235)', async () => {
    for (const authorization of [`bearer ${ADMIN_TOKEN}`, `BEARER  ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}`]) {
      assert.equal((await request('GET', '/admin/api/status', authorization)).status, 200, authorization);
    }
    assert.equal((await request('GET', '/admin/api/status', `Bearer${ADMIN_TOKEN}`)).status, 401);
  });

  test('an unknown path is a plain 404 (the operator may know the routes)', async () => {
    const reply = await request('GET', '/admin/api/nope', `Bearer ${ADMIN_TOKEN}`);
    assert.deepEqual([reply.status, JSON.parse(reply.text)], [404, { error: 'not found' }]);
  });

  test('a path parameter that is not valid percent-encoding is 400, not a 500 (regression)', async () => {
    for (const [path, token] of [
      ['/admin/api/events/%E0%A4%A', ADMIN_TOKEN],
      ['/api/orders/%E0%A4%A', API_TOKEN],
      ['/api/accounts/%ZZ/quota', API_TOKEN],
    ] as const) {
      const reply = await request('GET', path, `Bearer ${token}`);
      assert.deepEqual([reply.status, JSON.parse(reply.text)], [400, { error: 'malformed request' }], path);
    }
  });
});
