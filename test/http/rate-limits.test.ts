// Rate limits: per client IP, /api and /admin counted in full, the webhook
// counting rejected deliveries only, so that Stripe's bursts (a backlog retried at once, from a
// few IPs) are never limited, even from an address that is over its limit. The services here run
// with RATE_LIMIT_PER_MINUTE=20 (api 20, admin 5, webhook rejections 10 a minute), behind one
// trusted proxy, so that each test is its own client through X-Forwarded-For. /metrics counts
// refused requests only (a quarter, 5), as the webhook counts rejected deliveries.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { exampleObject, sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { ADMIN_TOKEN, API_TOKEN, startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';

const TOO_MANY = { error: 'too many requests from this address: retry after the delay in Retry-After' };

let database: TestDatabase;
let proxied: TestService;
let direct: TestService;

before(async () => {
  database = await createTestDatabase();
  proxied = await startTestService(database, { env: { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '20', TRUST_PROXY: '1' } });
  direct = await startTestService(database, { env: { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '20' } });
});
after(async () => {
  await Promise.all([proxied.close(), direct.close()]);
  await database.close();
});

let clients = 0;
/** A client address of its own, as the proxy in front would report it. */
const newClient = () => `203.0.113.${++clients}`;

interface Reply {
  status: number;
  body: unknown;
  headers: Headers;
}

async function send(service: TestService, path: string, init: RequestInit & { ip?: string } = {}): Promise<Reply> {
  const headers = new Headers(init.headers);
  if (init.ip) headers.set('x-forwarded-for', init.ip);
  const response = await fetch(service.url + path, { ...init, headers });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json');
  return { status: response.status, body: json ? JSON.parse(text) : text || undefined, headers: response.headers };
}

const validDelivery = (ip?: string) => {
  const { body, headers } = signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), WEBHOOK_SECRET);
  return { method: 'POST', body, headers, ...(ip && { ip }) };
};
const forgedDelivery = (ip?: string) => {
  const { body, headers } = signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), 'whsec_forged_0123456789');
  return { method: 'POST', body, headers, ...(ip && { ip }) };
};

function assertLimited(reply: Reply) {
  assert.equal(reply.status, 429);
  assert.deepEqual(reply.body, TOO_MANY);
  const retryAfter = Number(reply.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= 60, `Retry-After: ${reply.headers.get('retry-after')}`);
}

describe('the webhook', () => {
  test('rejected deliveries beyond the limit get 429, with Retry-After', async () => {
    const ip = newClient();
    for (let i = 0; i < 10; i++) assert.equal((await send(proxied, '/webhooks/stripe', forgedDelivery(ip))).status, 400, `rejection ${i + 1}`);
    assertLimited(await send(proxied, '/webhooks/stripe', forgedDelivery(ip)));
    // Another client is not affected.
    assert.equal((await send(proxied, '/webhooks/stripe', forgedDelivery(newClient()))).status, 400);
  });

  test('1,000 valid deliveries in one burst from one IP that is over its limit all get 200, and are all stored', async () => {
    const ip = newClient();
    for (let i = 0; i < 11; i++) await send(proxied, '/webhooks/stripe', forgedDelivery(ip));
    assertLimited(await send(proxied, '/webhooks/stripe', forgedDelivery(ip)));

    // 100 connections at once, as a backlog retried after an outage arrives (Stripe delivers in
    // parallel, not one connection per event): with counting by in-flight hits
    // (skipSuccessfulRequests) and a limit of 10, most of these would be 429.
    const deliveries = Array.from({ length: 1000 }, () => validDelivery(ip));
    const statuses: number[] = [];
    const queue = [...deliveries];
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        for (let delivery = queue.pop(); delivery; delivery = queue.pop()) statuses.push((await send(proxied, '/webhooks/stripe', delivery)).status);
      }),
    );
    assert.deepEqual(new Set(statuses), new Set([200]));
    assert.equal(statuses.length, 1000);
    const ids = deliveries.map((d) => (JSON.parse(d.body) as { id: string }).id);
    const stored = await database.db.selectFrom('stripe_events').select('event_id').where('event_id', 'in', ids).execute();
    assert.equal(stored.length, 1000);
    // Valid deliveries did not count: the client is still limited for what it gets wrong, no more.
    assertLimited(await send(proxied, '/webhooks/stripe', forgedDelivery(ip)));
  });

  test('without TRUST_PROXY a client cannot dodge the limit by making up X-Forwarded-For', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await send(direct, '/webhooks/stripe', forgedDelivery(newClient()))).status, 400);
    assertLimited(await send(direct, '/webhooks/stripe', forgedDelivery(newClient())));
    assert.equal((await send(direct, '/webhooks/stripe', validDelivery())).status, 200);
  });
});

describe('/api and /admin', () => {
  test('/api answers 429 past 20 requests a minute per IP, counting those without a token too', async () => {
    const ip = newClient();
    for (let i = 0; i < 10; i++) assert.equal((await send(proxied, '/api/packages', { ip })).status, 401);
    for (let i = 0; i < 10; i++) assert.equal((await send(proxied, '/api/packages', { ip, headers: { authorization: `Bearer ${API_TOKEN}` } })).status, 200);
    assertLimited(await send(proxied, '/api/packages', { ip, headers: { authorization: `Bearer ${API_TOKEN}` } }));
    assert.equal((await send(proxied, '/api/packages', { ip: newClient(), headers: { authorization: `Bearer ${API_TOKEN}` } })).status, 200);
  });

  test('/admin answers 429 past a quarter of it (5), known paths or not', async () => {
    const ip = newClient();
    for (const path of ['/admin/api/status', '/admin/anything', '/admin', '/admin/api/nope']) assert.equal((await send(proxied, path, { ip })).status, 401);
    assert.equal((await send(proxied, '/admin/api/status', { ip, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 200);
    assertLimited(await send(proxied, '/admin/api/status', { ip, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }));
  });

  test('the proxy’s own entry decides the client: entries a client prepends to X-Forwarded-For do not', async () => {
    const ip = newClient();
    for (let i = 0; i < 20; i++) assert.equal((await send(proxied, '/api/packages', { headers: { 'x-forwarded-for': `198.51.100.${i}, ${ip}` } })).status, 401);
    assertLimited(await send(proxied, '/api/packages', { headers: { 'x-forwarded-for': `198.51.100.99, ${ip}` } }));
  });

  // /metrics takes the admin token when METRICS_TOKEN is unset: no cheaper place to guess it.
  test('/metrics answers 429 to refused requests past a quarter (5); the right token is never limited', async () => {
    const worker = await startTestService(database, { env: { ROLE: 'worker', RATE_LIMIT_PER_MINUTE: '20', TRUST_PROXY: '1' } });
    try {
      for (const service of [proxied, worker]) {
        const ip = newClient();
        const wrong = { ip, headers: { authorization: 'Bearer wrong-token-0123456789' } };
        for (let i = 0; i < 5; i++) assert.equal((await send(service, '/metrics', wrong)).status, 401, `refusal ${i + 1}`);
        assertLimited(await send(service, '/metrics', wrong));
        assertLimited(await send(service, '/metrics', { ip }));
        for (let i = 0; i < 10; i++) assert.equal((await send(service, '/metrics', { ip, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 200);
        assert.equal((await send(service, '/metrics', { ip: newClient() })).status, 401, 'another client is not affected');
      }
    } finally {
      await worker.close();
    }
  });

  test('health checks are never limited', async () => {
    const ip = newClient();
    for (let i = 0; i < 50; i++) assert.equal((await send(proxied, i % 2 ? '/healthz' : '/readyz', { ip })).status, 200);
  });
});

describe('configuration', () => {
  const SECRETS = { NODE_ENV: 'test', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, API_TOKEN, ADMIN_TOKEN };
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig({ ...SECRETS, ...env });
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.problems.join('\n');
    }
    return '';
  };

  test('defaults: 1200 a minute, no proxy trusted', () => {
    const config = loadConfig(SECRETS);
    assert.deepEqual([config.rateLimitPerMinute, config.trustProxyHops], [1200, 0]);
  });

  test('TRUST_PROXY is a hop count or false, never true (anyone could then choose their IP)', () => {
    assert.equal(loadConfig({ ...SECRETS, TRUST_PROXY: '1' }).trustProxyHops, 1);
    assert.equal(loadConfig({ ...SECRETS, TRUST_PROXY: 'false' }).trustProxyHops, 0);
    for (const value of ['true', '-1', 'loopback', '11']) assert.match(problems({ TRUST_PROXY: value }), /^TRUST_PROXY .*\(example: TRUST_PROXY=1\)/, value);
  });

  test('RATE_LIMIT_PER_MINUTE is a whole number; 0 turns limiting off', async () => {
    assert.match(problems({ RATE_LIMIT_PER_MINUTE: 'lots' }), /^RATE_LIMIT_PER_MINUTE /);
    const unlimited = await startTestService(database, { env: { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '0' } });
    try {
      for (let i = 0; i < 30; i++) {
        const reply = await send(unlimited, '/admin/api/status');
        assert.equal(reply.status, 401);
        assert.equal(reply.headers.get('ratelimit'), null);
      }
    } finally {
      await unlimited.close();
    }
  });
});
