// STRIPE_TIMEOUT_SECONDS is a deadline for each attempt's whole answer, not an idle timeout: a
// Stripe (or a proxy before it) that trickles its answer a byte at a time is cut off at the
// timeout, and the checkout answers 502 "timeout" rather than whenever the last byte arrives.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { newAccountId } from '../support/factories.js';
import { startTestService, type TestService } from '../support/service.js';

const BYTE_EVERY_MS = 20;

/** A relay to the offline Stripe that passes its answers on one byte every BYTE_EVERY_MS. */
async function tricklingRelay(target: OfflineStripe): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const body = Buffer.concat(await req.toArray());
    const upstream = await fetch(target.url + req.url, {
      method: req.method,
      headers: req.headers as Record<string, string>,
      ...(body.length > 0 && { body }),
    });
    const answer = Buffer.from(await upstream.arrayBuffer());
    res.writeHead(upstream.status, { 'content-type': 'application/json', 'content-length': answer.length, 'request-id': 'req_trickled' });
    for (const byte of answer) {
      if (res.destroyed) return;
      res.write(Buffer.of(byte));
      await sleep(BYTE_EVERY_MS);
    }
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

let database: TestDatabase;
let stripe: OfflineStripe;
let relay: Awaited<ReturnType<typeof tricklingRelay>>;
let service: TestService;

before(async () => {
  database = await createTestDatabase();
  stripe = await startOfflineStripe();
  relay = await tricklingRelay(stripe);
  // A Checkout Session is over a thousand bytes: trickled, tens of seconds, far past the timeout.
  service = await startTestService(database, { stripe: { ...stripe, url: relay.url }, env: { ROLE: 'web', STRIPE_TIMEOUT_SECONDS: '1' } });
});
after(async () => {
  await service?.close();
  await relay?.close();
  await stripe?.close();
  await database?.close();
});

test('a Stripe answer trickled past STRIPE_TIMEOUT_SECONDS: 502 "timeout", the order pending', async () => {
  const reply = await service.call('POST', '/api/checkout', {
    body: { package_id: 'starter', account_id: newAccountId() },
    headers: { 'idempotency-key': randomUUID() },
  });
  assert.equal(reply.status, 502);
  assert.match(String(reply.body.error), /Stripe could not create the checkout session \(timeout\)/);
  const order = await service.call('GET', `/api/orders/${String(reply.body.order_id)}`);
  assert.equal(order.body.status, 'pending');
});
