// Runs and reversals asked at once of two instances of the service against one database, each
// with its own pools, as an app behind a load balancer retries them: one Idempotency-Key spends
// the credits once and gives them back once, whichever instance each retry reaches, and runs
// without a key never take a balance below zero.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { addGrants } from '../../../src/modules/ledger/account-credits.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { newAccountId } from '../../support/factories.js';
import { startTestService, type HttpReply, type TestService } from '../../support/service.js';

let database: TestDatabase;
let instances: [TestService, TestService];

before(async () => {
  database = await createTestDatabase();
  const first = await startTestService(database, { env: { ROLE: 'web' } });
  instances = [first, await startTestService(database, { stripe: first.stripe, env: { ROLE: 'web' } })];
});

after(async () => {
  for (const instance of instances ?? []) await instance.close();
  await database?.close();
});

async function accountWith(credits: number): Promise<string> {
  const accountId = newAccountId();
  await database.db.transaction().execute((tx) => addGrants(tx, [{ accountId, credits }]));
  return accountId;
}

/** `count` requests at once, alternating between the two instances. */
const atOnce = (count: number, send: (instance: TestService) => Promise<HttpReply>) =>
  Promise.all(Array.from({ length: count }, (_, i) => send(instances[i % 2]!)));
const keyed = (key: string | undefined) => (key === undefined ? {} : { headers: { 'idempotency-key': key } });
const run = (instance: TestService, accountId: string, quantity: number, key?: string) =>
  instance.call('POST', `/api/accounts/${accountId}/runs`, { body: { quantity }, ...keyed(key) });
const reverse = (instance: TestService, accountId: string, runId: unknown, key?: string) =>
  instance.call('POST', `/api/accounts/${accountId}/runs/${String(runId)}/reverse`, keyed(key));

async function state(accountId: string): Promise<{ remaining: unknown; runs: number; reversed: number }> {
  const quota = await instances[0].call('GET', `/api/accounts/${accountId}/quota`);
  const list = await instances[1].call('GET', `/api/accounts/${accountId}/runs`);
  const runs = list.body.runs as Array<{ reversed_at: unknown }>;
  return { remaining: quota.body.remaining, runs: runs.length, reversed: runs.filter((r) => r.reversed_at !== null).length };
}

/** Every reply is the one answer (`status`, the same body each time) or a 409 for a request still in flight. */
function oneAnswer(replies: HttpReply[], status: number): HttpReply {
  assert.deepEqual(
    replies.filter((r) => r.status !== status && r.status !== 409),
    [],
  );
  const answered = replies.filter((r) => r.status === status);
  assert.ok(answered.length >= 1, `no ${status} among ${JSON.stringify(replies.map((r) => r.status))}`);
  for (const reply of answered) assert.deepEqual(reply.body, answered[0]!.body);
  return answered[0]!;
}

test('ten runs at once with one key, across both instances, use the credits once', async () => {
  for (let trial = 1; trial <= 3; trial++) {
    const accountId = await accountWith(100);
    const key = `key-${randomUUID()}`;
    const made = oneAnswer(await atOnce(10, (instance) => run(instance, accountId, 7, key)), 201);
    assert.deepEqual(await state(accountId), { remaining: 93, runs: 1, reversed: 0 }, `trial ${trial}`);
    assert.deepEqual((await run(instances[trial % 2]!, accountId, 7, key)).body, made.body, 'a later retry replays the run');
  }
});

test('ten reversals at once with one key, across both instances, give the credits back once', async () => {
  const accountId = await accountWith(10);
  const runId = (await run(instances[0], accountId, 4)).body.run_id;
  const key = `key-${randomUUID()}`;
  const reversed = oneAnswer(await atOnce(10, (instance) => reverse(instance, accountId, runId, key)), 200);
  assert.equal(reversed.body.remaining, 10);
  assert.deepEqual(await state(accountId), { remaining: 10, runs: 1, reversed: 1 });
  assert.deepEqual((await reverse(instances[1], accountId, runId, key)).body, reversed.body, 'a later retry replays the reversal');
});

test('twenty runs at once without a key, across both instances, spend the balance to zero and no further', async () => {
  const accountId = await accountWith(10);
  const replies = await atOnce(20, (instance) => run(instance, accountId, 1));
  assert.deepEqual(replies.map((r) => r.status).sort(), [...Array<number>(10).fill(201), ...Array<number>(10).fill(402)]);
  assert.deepEqual(await state(accountId), { remaining: 0, runs: 10, reversed: 0 });
});
