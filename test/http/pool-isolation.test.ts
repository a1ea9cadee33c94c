// Each kind of work has its own connection pool (src/db/pools.ts). With every connection of the
// API's pool taken, an API request waits its connection timeout and gets 503 with Retry-After,
// logged and counted as a busy pool, not as a database that is down; webhook deliveries, on their
// own pool, go on being stored. /readyz asks the database at most once a second however often it
// is probed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import { Readiness } from '../../src/http/readiness.js';
import { exampleObject, sampleEvent } from '../../src/stripe/sample-events.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

test('a busy API pool answers 503 busy, counted per pool, while webhooks are stored', { timeout: 30_000 }, async () => {
  const api = file.service.pools.api.pool;
  const held: pg.PoolClient[] = [];
  try {
    while (held.length < (api.options.max ?? 0)) held.push(await api.connect());
    const waiting = file.service.call('GET', '/api/orders/ord_any');
    // Meanwhile the webhook's own pool serves deliveries.
    const event = sampleEvent('charge.succeeded', exampleObject('charge'));
    assert.deepEqual(await file.service.deliver(event), { status: 200, body: { received: true } });
    const reply = await waiting;
    assert.deepEqual(reply, { status: 503, body: { error: 'too busy right now, retry shortly' } });
  } finally {
    for (const client of held) client.release();
  }
  const metrics = await fetch(`${file.service.url}/metrics`, { headers: { authorization: `Bearer ${file.service.config.metricsToken}` } });
  const text = await metrics.text();
  assert.match(text, /stripe_inbox_db_pool_busy_total\{pool="api"\} 1\n/);
  assert.match(text, /stripe_inbox_webhook_requests_total\{outcome="unavailable"\} 0\n/);
});

test('/readyz probes share one database check a second', async () => {
  const pool = file.service.pools.intake.pool;
  let queries = 0;
  // The real pool, counted: how many times readiness asks Postgres.
  const counting = new Proxy(pool, {
    get(target, name, receiver) {
      if (name !== 'query') return Reflect.get(target, name, receiver) as unknown;
      return (text: string) => {
        queries++;
        return target.query(text);
      };
    },
  });
  const readiness = new Readiness(counting);
  readiness.markMigrated();
  const results = await Promise.all(Array.from({ length: 200 }, () => readiness.check()));
  assert.ok(results.every((r) => r.ready));
  assert.equal(queries, 1);
});
