// A Stripe API that accepts connections and never answers (Stripe's own incidents) must cost
// checkouts only: no database connection waits on Stripe, so while three times the API pool's
// size of checkouts hang, webhook deliveries are answered at once, /readyz stays ready, the API
// still reads, and the worker keeps fulfilling. Past STRIPE_MAX_CONCURRENT_CALLS a checkout is
// refused at once with 503 and Retry-After; an Idempotency-Key is in flight only while its lease
// runs, so a request that died does not block its key.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, newAccountId, paidEvent } from '../support/factories.js';
import { requestHash } from '../../src/http/idempotent-request.js';
import { signDelivery } from '../../src/stripe/sample-events.js';
import { startTestService, WEBHOOK_SECRET, type HttpReply, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const API_POOL_SIZE = 8;
const HANGING = API_POOL_SIZE * 3;

let database: TestDatabase;
let stripe: OfflineStripe;
let service: TestService;
/** Checkouts left waiting on Stripe until the end. */
const hung: Array<Promise<unknown>> = [];
before(async () => {
  database = await createTestDatabase();
  stripe = await startOfflineStripe();
  service = await startTestService(database, {
    stripe,
    // A call waits up to a minute, so the hung ones stay hung for the whole test; the bound on
    // calls in flight is above the hung ones, so only pool isolation keeps the rest working.
    env: { ROLE: 'all', STRIPE_TIMEOUT_SECONDS: '60', STRIPE_MAX_CONCURRENT_CALLS: String(HANGING + 1) },
  });
});
after(async () => {
  // Closing the fake Stripe first ends the hung calls (502s), then the service stops cleanly.
  await stripe.close();
  await Promise.all(hung);
  await service.close();
  await database.close();
});

const checkout = (key: string, accountId = newAccountId()): Promise<HttpReply> =>
  service.call('POST', '/api/checkout', { body: { package_id: 'starter', account_id: accountId }, headers: { 'idempotency-key': key } });

/** The checkouts that reached the fake Stripe since it stopped answering. */
let answeredCalls = 0;
const hungCalls = () => stripe.requests.filter((r) => r.path === '/v1/checkout/sessions').length - answeredCalls;

test('an Idempotency-Key is in flight while its lease runs, and free once it ran out (a request that died)', async () => {
  const key = randomUUID();
  const accountId = newAccountId();
  const body = { package_id: 'starter', account_id: accountId };
  // A request registered the key and died before answering: its order exists, its lease runs.
  const order = await givenOrder(database, { accountId });
  await database.db
    .insertInto('api_idempotency_keys')
    .values({
      idempotency_key: `checkout:${key}`,
      operation: 'checkout',
      request_hash: requestHash(['starter', accountId, null]),
      subject: JSON.stringify({ orderId: order.order_id }),
      response_status: null,
      response_body: null,
      leased_until: sql<Date>`now() + interval '1 hour'`,
      counted: false,
    })
    .execute();
  const call = () => service.call('POST', '/api/checkout', { body, headers: { 'idempotency-key': key } });
  assert.equal((await call()).status, 409);
  await sql`update api_idempotency_keys set leased_until = now() - interval '1 second' where idempotency_key = ${`checkout:${key}`}`.execute(database.db);
  const retried = await call();
  assert.equal(retried.status, 201);
  assert.equal(retried.body.order_id, order.order_id, 'the retry completes the order the key named');
  assert.deepEqual(await call(), retried, 'and is replayed from then on');
});

test('checkouts hung on Stripe hold no database connection: webhooks, readiness, the API and fulfilment carry on', async () => {
  answeredCalls = hungCalls();
  stripe.setDelay(3_600_000);
  const keys = Array.from({ length: HANGING }, () => randomUUID());
  const firstAccount = newAccountId();
  hung.push(...keys.map((key, i) => checkout(key, i === 0 ? firstAccount : undefined).catch(() => {})));
  await waitFor(`${HANGING} checkouts to wait on Stripe`, () => Promise.resolve(hungCalls() === HANGING));

  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name like 'stripe-inbox-%' and state like 'idle in transaction%'`.execute(database.db);
  assert.equal(rows[0]!.n, 0, 'no transaction is open while Stripe is called');

  // Each delivery is answered within a second, and fulfilled.
  const orders = await Promise.all(Array.from({ length: 10 }, () => givenOrder(database)));
  for (const order of orders) {
    const event = paidEvent(order);
    const reply = await fetchWithin(service.url + '/webhooks/stripe', 1_000, { method: 'POST', ...signDelivery(event, WEBHOOK_SECRET) });
    assert.deepEqual([reply.status, await reply.json()], [200, { received: true }]);
    assert.equal((await finishedEvent(database, event.id)).status, 'processed');
  }
  assert.equal((await fetchWithin(`${service.url}/readyz`, 1_000)).status, 200);
  assert.equal((await service.call('GET', `/api/orders/${orders[0]!.order_id}`)).body.status, 'paid');
  // The same key again while its request waits on Stripe: in flight, at once.
  assert.equal((await checkout(keys[0]!, firstAccount)).status, 409);
});

test('past STRIPE_MAX_CONCURRENT_CALLS a checkout is refused at once with 503 and Retry-After', async () => {
  // The hung checkouts hold all slots but one; this one takes it.
  hung.push(checkout(randomUUID()).catch(() => {}));
  await waitFor('the last slot to be taken', () => Promise.resolve(hungCalls() === HANGING + 1));
  const refused = await fetchWithin(`${service.url}/api/checkout`, 1_000, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.config.apiToken}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ package_id: 'starter', account_id: newAccountId() }),
  });
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get('retry-after'), '2');
  assert.match(((await refused.json()) as { error: string }).error, /too many calls to Stripe/);
  assert.equal(hungCalls(), HANGING + 1, 'the refused checkout never reached Stripe');
});

/** fetch that fails the test if no answer comes within `ms`. */
function fetchWithin(url: string, ms: number, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, signal: AbortSignal.timeout(ms) });
}
