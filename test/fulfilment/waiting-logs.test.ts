// What an operator reads while an event waits, from the service as a real process: the wait is one
// info line, without a stack, for each event that waits; nothing at warn or above, and none of
// graphile-worker's "Failed task" lines, which would page someone for the normal course of events.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { disputeObject, sampleEvent, signDelivery, type SampleEvent } from '../../src/stripe/sample-events.js';
import { spawnService, type ChildService } from '../support/child-service.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, paidEvent, waitingEvent } from '../support/factories.js';
import { WEBHOOK_SECRET } from '../support/service.js';

let database: TestDatabase;
let child: ChildService;

before(async () => {
  database = await createTestDatabase();
  child = await spawnService(database.url, { MAX_ATTEMPTS: '1' });
});
after(async () => {
  child.process.kill('SIGKILL');
  await database.close();
});

async function deliver(event: SampleEvent): Promise<void> {
  const signed = signDelivery(event, WEBHOOK_SECRET);
  assert.equal((await fetch(`${child.url}/webhooks/stripe`, { method: 'POST', body: signed.body, headers: signed.headers })).status, 200);
}

test('a dispute that waits for its payment is told once, at info, without a stack; nothing louder is logged', async () => {
  const order = await givenOrder(database);
  const payment = paidEvent(order);
  const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
  const withdrawn = sampleEvent(
    'charge.dispute.funds_withdrawn',
    disputeObject({ paymentIntentId, amount: order.amount, currency: order.currency, status: 'needs_response' }),
  );
  await deliver(withdrawn);
  await waitingEvent(database, withdrawn.id);
  await deliver(payment);
  assert.equal((await finishedEvent(database, withdrawn.id)).status, 'processed');
  child.process.kill('SIGTERM');
  assert.equal(await child.exited, 0);

  const aboutIt = child.logs.filter((line) => line.eventId === withdrawn.id);
  const waits = aboutIt.filter((line) => /waits for what it needs/.test(String(line.msg)));
  assert.equal(waits.length, 1, JSON.stringify(aboutIt));
  assert.equal(waits[0]!.level, 30, 'info');
  assert.equal('err' in waits[0]!, false, 'no stack');
  const loud = child.logs.filter((line) => Number(line.level) >= 40 || /Failed task/i.test(String(line.msg)));
  assert.deepEqual(loud, []);
});
