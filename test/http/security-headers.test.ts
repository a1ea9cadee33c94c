// Every response carries X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer, whatever
// the route or outcome (the webhook's hand-written 200 included), and Strict-Transport-Security
// when the request came over HTTPS: behind a trusted proxy, its X-Forwarded-Proto says so; from a
// client the service does not trust, that header proves nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { exampleObject, sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ADMIN_TOKEN, API_TOKEN, startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';

let database: TestDatabase;
let proxied: TestService;
let direct: TestService;
let worker: TestService;

before(async () => {
  database = await createTestDatabase();
  proxied = await startTestService(database, { env: { ROLE: 'web', TRUST_PROXY: '1' } });
  direct = await startTestService(database, { env: { ROLE: 'web' } });
  worker = await startTestService(database, { env: { ROLE: 'worker' } });
});
after(async () => {
  await Promise.all([proxied.close(), direct.close(), worker.close()]);
  await database.close();
});

const delivery = (secret: string): RequestInit => {
  const { body, headers } = signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), secret);
  return { method: 'POST', body, headers };
};
const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });

// [path, request, the status it must get]: one of each kind of answer.
const REQUESTS: ReadonlyArray<readonly [string, () => RequestInit, number]> = [
  ['/webhooks/stripe', () => delivery(WEBHOOK_SECRET), 200],
  ['/webhooks/stripe', () => delivery('whsec_someone_else_0123456789abcdef'), 400],
  ['/api/packages', () => bearer(API_TOKEN), 200],
  ['/api/packages', () => ({}), 401],
  ['/api/orders/%E0%A4%A', () => bearer(API_TOKEN), 400],
  ['/admin', () => ({ headers: { accept: 'text/html' } }), 401],
  ['/admin/api/status', () => bearer(ADMIN_TOKEN), 200],
  ['/metrics', () => bearer(ADMIN_TOKEN), 200],
  ['/healthz', () => ({}), 200],
  ['/nowhere', () => ({}), 404],
];

async function headersOf(service: TestService, path: string, init: RequestInit, expected: number, extra: Record<string, string> = {}): Promise<Headers> {
  const response = await fetch(service.url + path, { ...init, headers: { ...(init.headers as Record<string, string>), ...extra } });
  await response.arrayBuffer();
  assert.equal(response.status, expected, path);
  return response.headers;
}

test('every response says nosniff and no-referrer, and no HSTS over plain HTTP', async () => {
  for (const [path, init, status] of REQUESTS) {
    const headers = await headersOf(proxied, path, init(), status);
    assert.equal(headers.get('x-content-type-options'), 'nosniff', path);
    assert.equal(headers.get('referrer-policy'), 'no-referrer', path);
    assert.equal(headers.get('strict-transport-security'), null, path);
  }
});

test('over HTTPS (as the trusted proxy reports it) every response adds Strict-Transport-Security', async () => {
  for (const [path, init, status] of REQUESTS) {
    const headers = await headersOf(proxied, path, init(), status, { 'x-forwarded-proto': 'https' });
    assert.equal(headers.get('strict-transport-security'), 'max-age=31536000', path);
  }
});

test('without TRUST_PROXY, a client saying X-Forwarded-Proto: https gets no HSTS', async () => {
  const headers = await headersOf(direct, '/healthz', {}, 200, { 'x-forwarded-proto': 'https' });
  assert.equal(headers.get('strict-transport-security'), null);
  assert.equal(headers.get('x-content-type-options'), 'nosniff');
});

test('ROLE=worker’s health and metrics answers carry them too', async () => {
  for (const [path, init, status] of [
    ['/healthz', {}, 200],
    ['/metrics', {}, 401],
    ['/metrics', bearer(ADMIN_TOKEN), 200],
  ] as const) {
    const headers = await headersOf(worker, path, init, status);
    assert.equal(headers.get('x-content-type-options'), 'nosniff', path);
    assert.equal(headers.get('referrer-policy'), 'no-referrer', path);
  }
});
