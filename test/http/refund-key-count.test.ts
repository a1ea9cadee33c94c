// A refund's sequence number comes from counting the refund keys that name its order (countKeys).
// Every checkout takes a key too, so the table grows with the shop's history: the count must read
// the order's keys, not every key ever taken. Plans are read from auto_explain, on the real
// statement countKeys sends, under both ways Postgres plans a prepared statement.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openExplainedDatabase } from '../../scripts/dev/explained-database.js';
import { countKeys } from '../../src/http/idempotent-request.js';
import { databaseForFile } from '../support/database.js';
import { rowsRead } from '../support/plans.js';

const database = databaseForFile();

const CHECKOUTS = 20_000;
const REFUNDS = 3;

test("counting an order's refund keys reads that order's keys, however many checkouts came before", async () => {
  const { db } = database;
  await sql`
    insert into orders (order_id, package_id, account_id, amount, currency, credits)
    select 'ord_' || g, package_id, 'acct_' || g, amount, currency, credits
    from generate_series(1, ${CHECKOUTS}) g, packages where package_id = 'starter'`.execute(db);
  await sql`
    insert into api_idempotency_keys (idempotency_key, request_hash, operation, subject)
    select 'checkout-' || g, 'hash', 'checkout', jsonb_build_object('orderId', 'ord_' || g)
    from generate_series(1, ${CHECKOUTS}) g`.execute(db);
  await sql`
    insert into api_idempotency_keys (idempotency_key, request_hash, operation, subject)
    select 'refund-' || g, 'hash', 'refund', jsonb_build_object('orderId', 'ord_7', 'seq', g, 'amount', 100)
    from generate_series(1, ${REFUNDS}) g`.execute(db);
  await sql`analyze api_idempotency_keys`.execute(db);

  const explained = openExplainedDatabase(database.url);
  try {
    for (const planCacheMode of ['force_custom_plan', 'force_generic_plan']) {
      await sql`select set_config('plan_cache_mode', ${planCacheMode}, false)`.execute(explained.db);
      const counted = await explained.db.transaction().execute((tx) => countKeys(tx, 'refund', { orderId: 'ord_7' }));
      assert.equal(counted, REFUNDS);
      assert.equal(explained.problem(), undefined);
      const plan = explained.plans.findLast((logged) => /from api_idempotency_keys/.test(logged));
      assert.ok(plan, 'the count was explained');
      // The order's refund keys and its checkout key, which names it too.
      const read = rowsRead(plan, 'api_idempotency_keys');
      assert.ok(read >= REFUNDS && read <= REFUNDS + 1, `${planCacheMode}: counting read ${read} keys for an order with ${REFUNDS + 1}:\n${plan}`);
    }
  } finally {
    await explained.close();
  }
});
