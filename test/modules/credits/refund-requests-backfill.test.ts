// sql/credits/0030 records the refunds asked before it from their Idempotency-Keys: one Stripe
// answered holds its amount back as succeeded, one whose call failed holds nothing and is held
// again when its key is retried, if it still fits.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { migrate } from '../../../src/db/migrate.js';
import { requestHash } from '../../../src/http/idempotent-request.js';
import { createLogger } from '../../../src/logger.js';
import { serviceMigrations } from '../../../src/modules/index.js';
import { runWorkerMigrations } from '../../../src/queue/worker-migrations.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { startTestService, type TestService } from '../../support/service.js';

const ORDER = 'ord_before_0030';
const PAYMENT_INTENT = 'pi_before_0030';

let database: TestDatabase;
let service: TestService;

before(async () => {
  database = await createTestDatabase({ empty: true });
  const migrations = await serviceMigrations();
  const logger = createLogger('silent');
  await migrate(
    database.pool,
    logger,
    migrations.filter((m) => m.version < 30),
    { runWorkerMigrations },
  );
  await sql`
    insert into orders (order_id, package_id, account_id, amount, currency, credits, status, paid_at, payment_intent_id)
    values (${ORDER}, 'starter', 'acct_before_0030', 4900, 'chf', 40, 'paid', now(), ${PAYMENT_INTENT})`.execute(database.db);
  await refundKey('answered', { seq: 1, amount: 1000 }, { order_id: ORDER, refund_id: 're_before_0030', amount: 1000, status: 'succeeded' });
  await refundKey('failed', { seq: 2, amount: 3900 });
  await migrate(database.pool, logger, migrations, { runWorkerMigrations });
  service = await startTestService(database);
});

after(async () => {
  await service?.close();
  await database?.close();
});

/** A refund key as the release before 0030 registered it. */
async function refundKey(key: string, refund: { seq: number; amount: number }, answer?: Record<string, unknown>) {
  await sql`
    insert into api_idempotency_keys (idempotency_key, operation, request_hash, subject, counted, response_status, response_body)
    values (${`refund:${key}`}, 'refund', ${requestHash([ORDER, refund.amount])}, ${JSON.stringify({ orderId: ORDER, ...refund })}::jsonb, true,
            ${answer ? 201 : null}, ${answer ? JSON.stringify(answer) : null}::jsonb)`.execute(database.db);
}

const refund = (key: string, body: { amount?: number }) =>
  service.call('POST', `/admin/api/orders/${ORDER}/refund`, { body, headers: { 'idempotency-key': key } });

test('the refunds asked before 0030 are recorded: the answered one holds its amount, the failed one is held again by its retry', async () => {
  const recorded = await database.db
    .selectFrom('refund_requests')
    .select(['seq', 'amount', 'status', 'stripe_refund_id'])
    .where('order_id', '=', ORDER)
    .orderBy('seq')
    .execute();
  assert.deepEqual(recorded, [
    { seq: 1, amount: 1000, status: 'succeeded', stripe_refund_id: 're_before_0030' },
    { seq: 2, amount: 3900, status: 'failed', stripe_refund_id: null },
  ]);

  const retried = await refund('failed', { amount: 3900 });
  assert.equal(retried.status, 201);
  const sent = service.stripe.requests.filter((r) => r.path === '/v1/refunds');
  assert.deepEqual(
    sent.map((r) => [r.idempotencyKey, r.params.amount]),
    [[`refund:${ORDER}:2`, '3900']],
  );

  const more = await refund('after-0030', {});
  assert.equal(more.status, 409);
  assert.equal(more.body.refundable_amount, 0);
});
