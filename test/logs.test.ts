// Logs are structured and safe to ship anywhere: one line per webhook with its id, type, outcome
// and duration, worker lines with event, attempt and status; and no secret, token, signature or
// payload in any line, at the most verbose level, whatever requests come in.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { signDelivery } from '../src/stripe/sample-events.js';
import { spawnService, type ChildService } from './support/child-service.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { finishedEvent, givenOrder, paidEvent } from './support/factories.js';
import { ADMIN_TOKEN, API_TOKEN, PREVIOUS_WEBHOOK_SECRET, STRIPE_SECRET_KEY, WEBHOOK_SECRET } from './support/service.js';

let database: TestDatabase;
let child: ChildService;

before(async () => {
  database = await createTestDatabase();
  child = await spawnService(database.url, { LOG_LEVEL: 'trace', SWEEP_CRON: '0 0 1 1 *' });
});
after(async () => {
  child.process.kill('SIGKILL');
  await database.close();
});

test('no secret, token, signature or payload reaches the logs', async () => {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  event.data.object.customer_details = { email: 'buyer-secret@example.com', name: 'Payload Only' };
  const signed = signDelivery(event, WEBHOOK_SECRET);
  const post = (headers: Record<string, string>, body = signed.body) => fetch(`${child.url}/webhooks/stripe`, { method: 'POST', body, headers });
  assert.equal((await post(signed.headers)).status, 200);
  assert.equal((await post(signed.headers)).status, 200);
  assert.equal((await post(signDelivery(event, 'whsec_forged_0123456789').headers)).status, 400);
  assert.equal((await post(signed.headers, signed.body.replace('Payload Only', 'Tampered'))).status, 400);
  for (const [path, token] of [
    ['/api/packages', API_TOKEN],
    ['/admin/api/status', ADMIN_TOKEN],
    ['/admin/api/status', 'wrong-token-0123456789'],
    ['/metrics', ADMIN_TOKEN],
  ] as const) {
    await fetch(`${child.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  }
  // A checkout whose Stripe call fails (nothing listens at STRIPE_API_BASE): an error path.
  await fetch(`${child.url}/api/checkout`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ package_id: 'starter', account_id: 'acct_logs', email: 'checkout-secret@example.com' }),
  });
  await finishedEvent(database, event.id);
  child.process.kill('SIGTERM');
  assert.equal(await child.exited, 0);

  const text = JSON.stringify(child.logs);
  const signature = signed.headers['stripe-signature']!;
  for (const secret of [
    WEBHOOK_SECRET,
    PREVIOUS_WEBHOOK_SECRET,
    API_TOKEN,
    ADMIN_TOKEN,
    'wrong-token-0123456789',
    STRIPE_SECRET_KEY,
    signature,
    signature.split('v1=')[1]!,
    'buyer-secret@example.com',
    'Payload Only',
    'checkout-secret@example.com',
  ]) {
    assert.ok(!text.includes(secret), `the logs contain ${secret.slice(0, 12)}…`);
  }

  const webhookLines = child.logs.filter((l) => l.msg === 'webhook');
  assert.deepEqual(
    webhookLines.map((l) => [l.eventId, l.type, l.outcome]),
    [
      [event.id, 'checkout.session.completed', 'claimed'],
      [event.id, 'checkout.session.completed', 'duplicate'],
    ],
  );
  assert.ok(webhookLines.every((l) => typeof l.durationMs === 'number'));
  assert.ok(child.logs.some((l) => l.msg === 'event fulfilled' && l.eventId === event.id && l.attempt === 1 && l.status === 'processed'));
});
