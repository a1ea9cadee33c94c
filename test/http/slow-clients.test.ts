// Clients that send slowly or hold big unverified bodies cannot hold the service's memory or
// connections: a request has HTTP_REQUEST_TIMEOUT_SECONDS to arrive (its headers 10 s at most,
// here less), and the bytes of webhook bodies held before their signature is checked are bounded
// across all requests (WEBHOOK_BODY_BUDGET_MB); past it a delivery gets 503 with Retry-After,
// while a real delivery of a few KB still fits.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { sampleEvent, exampleObject } from '../../src/stripe/sample-events.js';
import { serviceForFile } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { closedWithin, rawClient, type RawClient } from '../support/raw-client.js';

const REQUEST_TIMEOUT_S = 4;
const file = serviceForFile({ env: { ROLE: 'web', HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S), WEBHOOK_BODY_BUDGET_MB: '1' } });

async function connect(): Promise<RawClient> {
  const url = new URL(file.service.url);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return rawClient(socket);
}

const headers = (length: number) =>
  `POST /webhooks/stripe HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nStripe-Signature: t=1,v1=00\r\nContent-Length: ${length}\r\n\r\n`;

test('a body sent a byte at a time is cut off once the request timeout passes', async () => {
  const client = await connect();
  client.socket.write(headers(1_000));
  const dribble = setInterval(() => client.socket.write('x'), 200);
  try {
    await closedWithin(client, (REQUEST_TIMEOUT_S + 3) * 1000);
  } finally {
    clearInterval(dribble);
  }
  assert.match(client.received(), /^HTTP\/1\.1 408/);
});

test('headers sent a byte at a time are cut off too', async () => {
  const client = await connect();
  const text = headers(10);
  let sent = 0;
  const dribble = setInterval(() => sent < text.length && client.socket.write(text[sent++]!), 200);
  try {
    await closedWithin(client, (REQUEST_TIMEOUT_S + 3) * 1000);
  } finally {
    clearInterval(dribble);
  }
  assert.ok(sent < text.length, 'closed before the headers were complete');
});

test('unverified bodies past the budget get 503 with Retry-After; a real delivery still fits; closing frees the budget', async () => {
  // 900 KB of a body held open, of the 1 MiB budget.
  const holder = await connect();
  holder.socket.write(headers(1_000_000) + 'x'.repeat(900_000));
  const big = () => fetch(`${file.service.url}/webhooks/stripe`, { method: 'POST', body: 'y'.repeat(300_000), headers: { 'stripe-signature': 't=1,v1=00' } });
  const refused = await waitFor('the held body to fill the budget', async () => {
    const reply = await big();
    return reply.status === 503 && reply;
  });
  assert.equal(refused.headers.get('retry-after'), '1');
  assert.match(((await refused.json()) as { error: string }).error, /too many request bodies/);

  // A real delivery is a few KB: it fits beside the held body.
  const event = sampleEvent('charge.succeeded', exampleObject('charge'));
  assert.deepEqual(await file.service.deliver(event), { status: 200, body: { received: true } });

  holder.socket.destroy();
  await holder.closed;
  // Freed: the same 300 KB body is read to the end and refused for its signature instead.
  await waitFor('the budget to come back', async () => (await big()).status === 400);
});
