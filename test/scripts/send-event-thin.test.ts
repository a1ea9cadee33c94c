// `npm run send-event -- --thin` as a developer runs it against `npm start`: the stand-in is told
// of the snapshot event, the service gets the thin notification, fetches, and grants once.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { finishedEvent, givenOrder, grantsOf } from '../support/factories.js';
import { sendEventEnv } from '../support/send-event.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile();
const run = promisify(execFile);

async function sendEvent(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = sendEventEnv(file.database);
  delete env.STRIPE_API_BASE;
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'scripts/send-event.ts', ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return error as { code: number; stdout: string; stderr: string };
  }
}

test('--thin --times 2: one thin notification, answered 200 twice, fulfilled once from the snapshot event the stand-in was given', async () => {
  const order = await givenOrder(file.database);
  const result = await sendEvent([
    'checkout.session.completed',
    '--order',
    order.order_id,
    '--thin',
    '--times',
    '2',
    '--url',
    file.service.url,
    '--stripe-url',
    file.service.stripe.url,
    '--json',
  ]);
  assert.equal(result.code, 0, result.stderr);
  const sent = JSON.parse(result.stdout) as { event_id: string; type: string; replies: Array<{ status: number }> };
  assert.equal(sent.type, 'v1.checkout.session.completed');
  assert.deepEqual(
    sent.replies.map((r) => r.status),
    [200, 200],
  );

  assert.equal((await finishedEvent(file.database, sent.event_id)).status, 'processed');
  assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: sent.event_id, credits: order.credits }]);
});

test('--thin with no stand-in listening: exit 1, saying what to run', async () => {
  const order = await givenOrder(file.database);
  const result = await sendEvent([
    'checkout.session.completed',
    '--order',
    order.order_id,
    '--thin',
    '--url',
    file.service.url,
    '--stripe-url',
    'http://127.0.0.1:9',
  ]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /cannot reach the offline Stripe stand-in at http:\/\/127\.0\.0\.1:9: is npm start running without STRIPE_SECRET_KEY\?/);
});
