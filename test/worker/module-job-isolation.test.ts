// Module jobs that call Stripe run in their own slots (MODULE_JOB_CONCURRENCY), apart from event
// fulfilment (WORKER_CONCURRENCY): a Stripe that hangs holds subscription refreshes for their
// whole deadline, and new events are fulfilled meanwhile as if nothing were wrong.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { REFRESH_TASK } from '../../src/modules/billing/subscription-state.js';
import { randomStripeId } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, grantsOf, paidEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const HANGING_REFRESHES = 30;
const file = serviceForFile({ env: { STRIPE_TIMEOUT_SECONDS: '60', WORKER_CONCURRENCY: '5', MODULE_JOB_CONCURRENCY: '2' } });

test(`with ${HANGING_REFRESHES} subscription refreshes hanging on Stripe, a paid checkout is still fulfilled at once`, async () => {
  const { service, database } = file;
  service.stripe.setDelay(10 * 60_000);
  for (let i = 0; i < HANGING_REFRESHES; i++) {
    const payload = { subscriptionId: `sub_local_${i}`, stripeSubscriptionId: randomStripeId('sub') };
    await sql`select graphile_worker.add_job(${REFRESH_TASK}, ${JSON.stringify(payload)}::json, max_attempts => 1)`.execute(database.db);
  }
  const refreshesAtStripe = () => service.stripe.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v1/subscriptions/')).length;
  await waitFor('the module slots to be taken by refreshes waiting on Stripe', () => Promise.resolve(refreshesAtStripe() >= 2));

  const order = await givenOrder(database);
  const event = paidEvent(order);
  assert.equal((await service.deliver(event)).status, 200);
  // Sharing the fulfilment slots, the refreshes would hold all of them for the 60 s deadline.
  assert.equal((await finishedEvent(database, event.id)).status, 'processed');
  assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
  assert.equal(refreshesAtStripe(), 2, 'the refreshes still hang, two at a time');

  // Stripe comes back refusing: the refreshes end now, while the service can still record it.
  await service.stripe.close();
  await waitFor(
    'every refresh to have run its one attempt',
    async () => {
      const { rows } = await sql<{ left: number }>`
      select count(*)::int as left from graphile_worker.jobs
      where task_identifier = ${REFRESH_TASK} and (attempts < max_attempts or locked_at is not null)`.execute(database.db);
      return rows[0]?.left === 0;
    },
    { timeoutMs: 30_000 },
  );
});
