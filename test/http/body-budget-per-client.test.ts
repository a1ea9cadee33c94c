// One client cannot keep Stripe's deliveries out by holding unverified bodies: an address (req.ip,
// through TRUST_PROXY) holds at most a share of WEBHOOK_BODY_BUDGET_MB, a webhook body must arrive
// within a few seconds of its headers (Stripe sends it at once), and the 408s and budget
// refusals count as rejected deliveries for the rate limiter. Clients get addresses of their
// own by binding to other loopback addresses (127.0.0.0/8 is all loopback on Linux).
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { exampleObject, sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { closedWithin, rawClient, type RawClient } from '../support/raw-client.js';

let database: TestDatabase;
/** The defaults (16 MiB budget, 30 s request timeout), which one address must not be able to fill. */
let service: TestService;
/** One rejected delivery a minute per address: shows what counts as rejected. */
let limited: TestService;

before(async () => {
  database = await createTestDatabase();
  service = await startTestService(database, { env: { ROLE: 'web' } });
  limited = await startTestService(database, { env: { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '2' } });
});
after(async () => {
  await Promise.all([service.close(), limited.close()]);
  await database.close();
});

const MIB = 1024 * 1024;

/**
 * A webhook request from `from` declaring `declared` bytes of body and sending `sent` of them,
 * then waiting. It asks for 100 Continue and sends its body only once that (or the answer)
 * came: Node sends it as the request reaches the app, so the route has taken its body's share
 * of the budget, or refused it, before the next client connects.
 */
async function holdBody(to: TestService, from: string, declared: number, sent: number): Promise<RawClient> {
  const url = new URL(to.url);
  const socket = net.connect({ port: Number(url.port), host: '127.0.0.1', localAddress: from });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const client = rawClient(socket);
  const answered = new Promise<void>((resolve) => socket.once('data', () => resolve()).once('close', () => resolve()));
  socket.write(
    `POST /webhooks/stripe HTTP/1.1\r\nHost: localhost\r\nStripe-Signature: t=1,v1=00\r\nExpect: 100-continue\r\nContent-Length: ${declared}\r\n\r\n`,
  );
  await answered;
  if (!socket.destroyed) socket.write('x'.repeat(sent));
  // What came after the 100 Continue: the final answer.
  return { ...client, received: () => client.received().replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '') };
}

/** POSTs to the webhook from `from`, on a connection of its own; the status, or the socket error. */
function post(to: TestService, from: string, body: string, headers: Record<string, string>): Promise<number | string> {
  const url = new URL(to.url);
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port: url.port, path: '/webhooks/stripe', method: 'POST', headers, localAddress: from, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end(body);
  });
}

const delivery = (secret: string) => (to: TestService, from: string) => {
  const { body, headers } = signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), secret);
  return post(to, from, body, headers);
};
const signedDelivery = delivery(WEBHOOK_SECRET);
const forgedDelivery = delivery('whsec_forged_0123456789');

test('one address holding all the unverified bodies it may does not keep a signed delivery from another address out', async () => {
  // The attack: sixteen bodies one byte short of the 1 MiB limit, from one address,
  // enough to fill the whole 16 MiB budget.
  const attackers = await Promise.all(Array.from({ length: 16 }, () => holdBody(service, '127.0.0.2', MIB, MIB - 1)));
  try {
    // Once the server has taken all the attacker may hold, one more body from it is refused.
    const probe = 'y'.repeat(300_000);
    await waitFor('the attacker to hold all it may', async () => (await post(service, '127.0.0.2', probe, { 'stripe-signature': 't=1,v1=00' })) === 503, {
      intervalMs: 100,
    });
    const holding = attackers.filter((a) => a.received() === '').length;
    assert.ok(holding > 0, 'the attacker is holding bodies');
    // Stripe, from elsewhere, is let in while those bodies are still held.
    const status = await signedDelivery(service, '127.0.0.3');
    assert.equal(status, 200, `a signed delivery from another address got ${status} while ${holding} bodies of 1 MiB were held`);
    assert.equal(attackers.filter((a) => a.received() === '').length, holding, 'the attacker still held them');
  } finally {
    for (const attacker of attackers) attacker.socket.destroy();
  }
});

test('a stalled webhook body is cut with 408 after a few seconds, long before the 30 s request timeout', async () => {
  const stalled = await holdBody(service, '127.0.0.4', 1_000, 999);
  await closedWithin(stalled, 15_000);
  assert.match(stalled.received(), /^HTTP\/1\.1 408/);
});

test('a 408 counts as a rejected delivery for the rate limiter', async () => {
  const stalled = await holdBody(limited, '127.0.0.5', 1_000, 999);
  await closedWithin(stalled, 15_000);
  assert.match(stalled.received(), /^HTTP\/1\.1 408/);
  // One rejection a minute: the 408 was it. A valid delivery still gets in, as always.
  assert.equal(await forgedDelivery(limited, '127.0.0.5'), 429);
  assert.equal(await signedDelivery(limited, '127.0.0.5'), 200);
});

test('a refusal for the address’s share of the budget counts as a rejected delivery', async () => {
  const holders = [await holdBody(limited, '127.0.0.6', MIB, MIB - 1), await holdBody(limited, '127.0.0.6', MIB, MIB - 1)];
  try {
    const refused = await holdBody(limited, '127.0.0.6', MIB, 0);
    await closedWithin(refused, 10_000);
    assert.match(refused.received(), /^HTTP\/1\.1 503/);
    assert.equal(await forgedDelivery(limited, '127.0.0.6'), 429);
  } finally {
    for (const holder of holders) holder.socket.destroy();
  }
});
