// SIGTERM as Docker and Coolify send it (docs/design.md, invariant 10): readiness flips to 503 at
// once, accepted events are never lost, and the process exits 0 within SHUTDOWN_TIMEOUT_SECONDS.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { signDelivery } from '../src/stripe/sample-events.js';
import { sweepStaleEvents } from '../src/maintenance/sweep.js';
import { processesForFile } from './support/child-service.js';
import { givenOrder, paidEvent } from './support/factories.js';
import { WEBHOOK_SECRET } from './support/service.js';
import { waitFor } from './support/wait-for.js';

const file = processesForFile({ SWEEP_CRON: '0 0 1 1 *' });

test('SIGTERM during a burst: ready goes 503 at once, exit 0, and every acknowledged event is fulfilled', async () => {
  const service = await file.start({ SHUTDOWN_TIMEOUT_SECONDS: '5' });
  const orders = await Promise.all(Array.from({ length: 40 }, () => givenOrder(file.database)));
  const events = orders.map((order) => paidEvent(order));

  const acknowledged: string[] = [];
  const burst = (async () => {
    for (let i = 0; i < events.length; i += 4) {
      await Promise.all(
        events.slice(i, i + 4).map(async (event) => {
          const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
          const response = await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body, headers }).catch(() => undefined);
          if (response?.status === 200) acknowledged.push(event.id);
        }),
      );
    }
  })();
  await waitFor('part of the burst to be acknowledged', () => Promise.resolve(acknowledged.length >= 8));
  const signalled = Date.now();
  service.process.kill('SIGTERM');
  await waitFor('readiness to answer 503', async () => (await fetch(`${service.url}/readyz`)).status === 503, { timeoutMs: 2_000, intervalMs: 10 });
  assert.equal(await service.exited, 0);
  assert.ok(Date.now() - signalled < 5_000 + 1_000, 'exited within SHUTDOWN_TIMEOUT_SECONDS');
  await burst;

  // What the stopped process acknowledged is durable; another process and one sweep finish it.
  const worker = await file.start({ ROLE: 'worker' });
  await sweepStaleEvents(file.database.db, { staleAfterMs: 0, maxAttempts: 10 });
  await waitFor('acknowledged events to be fulfilled', async () => {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from stripe_events where status = 'processed' and event_id = any(${acknowledged})`.execute(file.database.db);
    return rows[0]!.n === acknowledged.length;
  });
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events where status = 'processing'`.execute(file.database.db);
  assert.equal(rows[0]!.n, 0);
  worker.process.kill('SIGTERM');
  assert.equal(await worker.exited, 0);
});

test('a second signal exits at once', async () => {
  const service = await file.start({ SHUTDOWN_TIMEOUT_SECONDS: '60' });
  service.process.kill('SIGTERM');
  await waitFor('readiness to answer 503', async () => (await fetch(`${service.url}/readyz`)).status === 503);
  service.process.kill('SIGTERM');
  assert.equal(await service.exited, 1);
});

test('ROLE=worker answers health checks and nothing else; ROLE=web runs no jobs', async () => {
  const worker = await file.start({ ROLE: 'worker' });
  assert.equal((await fetch(`${worker.url}/readyz`)).status, 200);
  assert.equal((await fetch(`${worker.url}/webhooks/stripe`, { method: 'POST', body: '{}' })).status, 404);

  const web = await file.start({ ROLE: 'web' });
  worker.process.kill('SIGTERM');
  assert.equal(await worker.exited, 0);
  const event = paidEvent(await givenOrder(file.database));
  const { body, headers } = signDelivery(event, WEBHOOK_SECRET);
  assert.equal((await fetch(`${web.url}/webhooks/stripe`, { method: 'POST', body, headers })).status, 200);
  // With no worker anywhere the job waits; the web process never picks it up.
  const { rows } = await sql<{ locked: boolean }>`
    select j.locked_at is not null as locked from graphile_worker.jobs j join stripe_events e on e.job_key = j.key where e.event_id = ${event.id}`.execute(
    file.database.db,
  );
  assert.deepEqual(rows, [{ locked: false }]);
  assert.equal(web.logs.filter((l) => l.task !== undefined).length, 0);
});
