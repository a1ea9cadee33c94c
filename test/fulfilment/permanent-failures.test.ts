// A checkout session that can never be fulfilled (unknown order, wrong amount, wrong currency)
// ends 'failed' on its first attempt with a reason ops can act on, and grants nothing
// (docs/design.md, "The event lifecycle": a permanent error is not retried). The service runs with
// its default MAX_ATTEMPTS, so a transient classification would leave the row 'processing' instead.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { PERIOD_SECONDS, periodEvents } from '../../src/modules/billing/sample-events.js';
import { addGrants } from '../../src/modules/ledger/account-credits.js';
import { checkoutSession, sampleEvent } from '../../src/stripe/sample-events.js';
import { finishedEvent, givenOrder, grantsOf, newAccountId, orderRow, paidEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';
import { subscribedThroughApi } from '../support/subscriptions.js';

const file = serviceForFile();

async function granted(accountId: string): Promise<unknown> {
  const reply = await file.service.call('GET', `/api/accounts/${accountId}/quota`);
  assert.equal(reply.status, 200);
  return reply.body.granted;
}

describe('a paid checkout session that cannot be fulfilled fails at once', () => {
  test('an unknown metadata.order_id: failed on attempt 1, naming the order, no grant', async () => {
    const orderId = 'ord_test_never_created';
    const event = sampleEvent('checkout.session.completed', checkoutSession({ orderId, amount: 4900, currency: 'chf' }));
    assert.equal((await file.service.deliver(event)).status, 200);

    const row = await finishedEvent(file.database, event.id);
    assert.equal(row.status, 'failed');
    assert.equal(row.attempts, 1);
    assert.match(row.last_error ?? '', new RegExp(`unknown order "${orderId}"`));
    const grants = await file.database.db.selectFrom('credit_grants').select('order_id').where('event_id', '=', event.id).execute();
    assert.deepEqual(grants, []);
  });

  const mismatches: Array<[string, { amount?: number; currency?: string }]> = [
    ['an amount other than the order price', { amount: 100 }],
    ['a currency other than the order currency', { currency: 'eur' }],
  ];
  for (const [name, override] of mismatches) {
    test(`${name}: failed on attempt 1, no grant, order still pending`, async () => {
      const order = await givenOrder(file.database);
      const event = paidEvent(order, override);
      assert.equal((await file.service.deliver(event)).status, 200);

      const row = await finishedEvent(file.database, event.id);
      assert.equal(row.status, 'failed');
      assert.equal(row.attempts, 1);
      assert.match(row.last_error ?? '', new RegExp(`mismatch for order ${order.order_id}`));
      const stored = await orderRow(file.database, order.order_id);
      assert.equal(stored.status, 'pending');
      assert.equal(stored.paid_at, null);
      assert.deepEqual(await grantsOf(file.database, order.order_id), []);
      assert.equal(await granted(order.account_id), 0);
    });
  }

  test('a grant past what a balance holds: failed on attempt 1 as numeric_value_out_of_range, the balance untouched', async () => {
    // The catalog refuses more than 1,000,000 credits; a row forged past that in SQL still may
    // not loop on "integer out of range" (account_credits.granted is a Postgres integer).
    await sql`insert into packages (package_id, name, amount, currency, credits) values ('forged_max', 'Forged', 4900, 'chf', 2147483647)`.execute(
      file.database.db,
    );
    const accountId = newAccountId();
    const first = await givenOrder(file.database, { packageId: 'forged_max', accountId });
    const firstEvent = paidEvent(first);
    assert.equal((await file.service.deliver(firstEvent)).status, 200);
    assert.equal((await finishedEvent(file.database, firstEvent.id)).status, 'processed');

    const second = await givenOrder(file.database, { packageId: 'forged_max', accountId });
    const event = paidEvent(second);
    assert.equal((await file.service.deliver(event)).status, 200);
    const row = await finishedEvent(file.database, event.id);
    assert.deepEqual([row.status, row.attempts], ['failed', 1], `${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
    assert.match(row.last_error ?? '', /numeric_value_out_of_range .*: integer out of range$/);
    assert.equal((await orderRow(file.database, second.order_id)).status, 'pending');
    assert.deepEqual(await grantsOf(file.database, second.order_id), []);
    assert.equal(await granted(accountId), 2147483647);
  });

  test("a plan's paid period past what a balance holds: invoice.paid failed on attempt 1 as numeric_value_out_of_range, the balance untouched", async () => {
    const subscription = await subscribedThroughApi(file, { linked: true });
    // 50 credits short of what an integer balance holds: the period's 100 cannot fit.
    const nearlyFull = 2_147_483_647 - 50;
    await file.database.db.transaction().execute((tx) => addGrants(tx, [{ accountId: subscription.accountId, credits: nearlyFull }]));
    const start = Math.floor(Date.now() / 1000) - 60;
    const paid = periodEvents(subscription, { cycle: 1, lastAt: start, periodEnd: start + PERIOD_SECONDS }).find((e) => e.type === 'invoice.paid')!;
    assert.equal((await file.service.deliver(paid)).status, 200);
    const row = await finishedEvent(file.database, paid.id);
    assert.deepEqual([row.status, row.attempts], ['failed', 1], `${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
    assert.match(row.last_error ?? '', /numeric_value_out_of_range .*: integer out of range$/);
    assert.equal(await granted(subscription.accountId), nearlyFull);
  });

  test('a failed event is visible to ops through the admin API', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order, { amount: order.amount + 1 });
    await file.service.deliver(event);
    await finishedEvent(file.database, event.id);

    const reply = await file.service.call('GET', `/admin/api/events/${event.id}`);
    assert.equal(reply.status, 200);
    assert.equal(reply.body.status, 'failed');
    assert.equal(reply.body.attempts, 1);
    assert.equal(typeof reply.body.last_error, 'string');
  });
});
