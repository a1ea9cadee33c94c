// Upgrading to sql/0015 with keys already taken: the refund keys stay counted (a refund's number
// is how many refund keys name its order), every other key becomes prunable. Migrated on an empty
// database in two steps, with the keys written between them as the releases before 0015 wrote them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { migrate } from '../../src/db/migrate.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import { createLogger } from '../../src/logger.js';
import { serviceMigrations } from '../../src/modules/index.js';
import { createTestDatabase } from '../support/database.js';

const RETENTION_MIGRATION = 15;

test('0015 keeps the refund keys taken before it counted and makes the others prunable', async () => {
  const database = await createTestDatabase({ empty: true });
  try {
    const logger = createLogger('silent');
    const migrations = await serviceMigrations();
    await migrate(
      database.pool,
      logger,
      migrations.filter((m) => m.version < RETENTION_MIGRATION),
      { runWorkerMigrations },
    );
    await sql`
      insert into orders (order_id, package_id, account_id, amount, currency, credits)
      select 'ord_before', package_id, 'acct_before', amount, currency, credits from packages where package_id = 'starter'`.execute(database.db);
    await sql`
      insert into api_idempotency_keys (idempotency_key, operation, request_hash, subject)
      values ('checkout:k1', 'checkout', 'hash', '{"orderId": "ord_before"}'),
             ('refund:k2', 'refund', 'hash', '{"orderId": "ord_before", "seq": 1, "amount": 100}'),
             ('subscription:k3', 'subscription', 'hash', '{"subscriptionId": "subscr_before"}')`.execute(database.db);

    await migrate(database.pool, logger, migrations, { runWorkerMigrations });

    const { rows } = await sql<{ idempotency_key: string; counted: boolean }>`
      select idempotency_key, counted from api_idempotency_keys order by idempotency_key`.execute(database.db);
    assert.deepEqual(rows, [
      { idempotency_key: 'checkout:k1', counted: false },
      { idempotency_key: 'refund:k2', counted: true },
      { idempotency_key: 'subscription:k3', counted: false },
    ]);
  } finally {
    await database.close();
  }
});
