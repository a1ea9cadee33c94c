// The usage pump in a real worker process: it reports a run on its own, and a worker SIGKILLed
// while Stripe is recording its send leaves a report that the next pump sends again under the
// same identifier, once its lease has run out. Stripe records it once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { spawnService } from '../../support/child-service.js';
import { meteredAccount, type MeteredAccount } from '../../support/metered.js';
import { serviceForFile } from '../../support/service.js';
import { waitFor } from '../../support/wait-for.js';

// The web part here, for the runs; the worker is a child process on the same database and stand-in.
const file = serviceForFile({ env: { ROLE: 'web' } });

async function use(account: MeteredAccount, quantity: number): Promise<string> {
  const reply = await file.service.call('POST', `/api/accounts/${account.accountId}/runs`, {
    body: { quantity },
    headers: { 'idempotency-key': `key-${randomUUID()}` },
  });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body.usage_id as string;
}

const statusOf = async (usageId: string) =>
  (await sql<{ status: string; attempts: number }>`select status, attempts from usage_reports where usage_id = ${usageId}`.execute(file.database.db)).rows[0]!;
const sendsOf = (usageId: string) =>
  file.service.stripe.requests.filter((r) => r.path === '/v1/billing/meter_events' && r.params.identifier === usageId).length;
const meterTotal = (account: MeteredAccount) => file.service.stripe.meterTotal(account.eventName, account.stripeCustomerId);

test('a worker killed while Stripe records its send: the report is sent again after its lease, and billed once', async () => {
  const account = await meteredAccount(file);
  const worker = () => spawnService(file.database.url, { ROLE: 'worker', STRIPE_API_BASE: file.service.stripe.url });

  // The worker's own pump reports a run, with nobody asking it to.
  const first = await worker();
  const reported = await use(account, 2);
  await waitFor('the worker to report the run', async () => (await statusOf(reported)).status === 'sent');

  // Stripe slow: the next send is in flight, at Stripe, when the worker dies.
  file.service.stripe.setDelay(1_500);
  const killed = await use(account, 5);
  await waitFor('the send to reach Stripe', () => Promise.resolve(sendsOf(killed) === 1));
  first.process.kill('SIGKILL');
  await first.exited;
  await waitFor('Stripe to record the event whose answer nobody read', () => Promise.resolve(meterTotal(account) === 7));
  file.service.stripe.setDelay(0);
  assert.deepEqual(await statusOf(killed), { status: 'pending', attempts: 1 });

  // Its lease runs out (moved to now, rather than waited for), and another worker takes it.
  await sql`update usage_reports set next_attempt_at = now() where usage_id = ${killed}`.execute(file.database.db);
  const second = await worker();
  try {
    await waitFor('the second worker to send it again', async () => (await statusOf(killed)).status === 'sent');
  } finally {
    second.process.kill('SIGTERM');
    await second.exited;
  }
  assert.equal(sendsOf(killed), 2);
  assert.equal(meterTotal(account), 7);
});
