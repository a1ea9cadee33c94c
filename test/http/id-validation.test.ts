// Ids and queries are checked at the edge: a NUL byte (which Postgres text refuses) or any other
// control character, a space or an over-long value in any id or search term is a 400 naming the
// parameter, never a 500, and nothing is logged as an error. Run as a process, to read its log.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { processesForFile, type ChildService } from '../support/child-service.js';
import { ADMIN_TOKEN, API_TOKEN } from '../support/service.js';

const file = processesForFile({ ROLE: 'web' });
let child: ChildService;

async function call(method: string, path: string, token: string) {
  const response = await fetch(child.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': 'key-id-validation' },
    ...(method === 'POST' && { body: '{}' }),
  });
  return { status: response.status, body: (await response.json()) as { error?: string } };
}

// Every route that takes an id in its path, or a search term.
const ROUTES: ReadonlyArray<readonly [string, (bad: string) => string, string, string]> = [
  ['GET', (id) => `/api/orders/${id}`, API_TOKEN, 'id'],
  ['GET', (id) => `/api/accounts/${id}/quota`, API_TOKEN, 'id'],
  ['POST', (id) => `/api/accounts/${id}/runs`, API_TOKEN, 'id'],
  ['GET', (id) => `/api/accounts/${id}/runs`, API_TOKEN, 'id'],
  ['POST', (id) => `/api/accounts/acct_x/runs/${id}/reverse`, API_TOKEN, 'run_id'],
  ['GET', (id) => `/admin/api/events/${id}`, ADMIN_TOKEN, 'id'],
  ['POST', (id) => `/admin/api/events/${id}/replay`, ADMIN_TOKEN, 'id'],
  ['POST', (id) => `/admin/api/orders/${id}/refund`, ADMIN_TOKEN, 'id'],
  ['GET', (q) => `/admin/api/search?q=${q}`, ADMIN_TOKEN, 'q'],
];
const BAD = ['a%00b', 'a%00', '%00', 'a%01b', 'a%1Fb', 'a%7Fb', 'a%20b', 'caf%C3%A9', 'x'.repeat(256)];

test('a control character, a space, a non-ASCII letter or 256 characters in an id or query is a 400 naming it', async () => {
  child = await file.start();
  for (const [method, path, token, parameter] of ROUTES) {
    for (const bad of BAD) {
      const reply = await call(method, path(bad), token);
      assert.equal(reply.status, 400, `${method} ${path(bad)}`);
      assert.match(reply.body.error ?? '', new RegExp(`^${parameter}: must be an id`), `${method} ${path(bad)}`);
    }
  }
});

test('a well-formed id that matches nothing is still a 404 (or an empty search)', async () => {
  assert.equal((await call('GET', '/api/orders/ord_unknown', API_TOKEN)).status, 404);
  assert.equal((await call('GET', '/admin/api/events/evt_unknown', ADMIN_TOKEN)).status, 404);
  assert.equal((await call('POST', '/admin/api/events/evt_unknown/replay', ADMIN_TOKEN)).status, 404);
  assert.equal((await call('GET', '/admin/api/search?q=%20evt_unknown%20', ADMIN_TOKEN)).status, 200, 'the search term is trimmed first');
});

test('none of it was logged as an error', () => {
  const errors = child.logs.filter((line) => typeof line.level === 'number' && line.level >= 50);
  assert.deepEqual(errors, []);
});
