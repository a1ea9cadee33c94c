// The backup and restore drill of docs/operations.md, step by step as an operator follows it:
// take a backup with pg_dump while orders are being paid, keep taking paid orders, lose the
// database, restore the backup into a fresh one, start the service on it and reconcile since the
// backup's time. Every order paid after the backup is granted exactly once, none before it twice.
// An order *opened* after the backup is gone with the database: its payment is refused visibly
// ('failed', unknown order), which the runbook tells the operator to look for.
//
// Runs with `npm run test:ha` on the machine's Postgres: pg_dump and pg_restore must be of the
// server's major, which the embedded Postgres does not ship.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { startOfflineStripe } from '../../src/dev/offline-stripe/index.js';
import type { OrderRow } from '../../src/modules/credits/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { givenOrder, paidEvent } from '../support/factories.js';
import { STRIPE_SECRET_KEY, startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'stripe-inbox-restore-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const PAID_BEFORE = 20;
const PAID_AFTER = 40;
const OPENED_AFTER = 5;

async function grantsPerOrder(database: TestDatabase) {
  const { rows } = await sql<{ granted_once: number; granted_twice: number; failed_unknown: number }>`
    select (select count(*)::int from (select order_id from credit_grants group by order_id having count(*) = 1) o) as granted_once,
           (select count(*)::int from (select order_id from credit_grants group by order_id having count(*) > 1) o) as granted_twice,
           (select count(*)::int from stripe_events where status = 'failed' and last_error like '%unknown order%') as failed_unknown`.execute(database.db);
  return rows[0]!;
}

test('restore drill: a pg_dump restored into a fresh database, then reconciled since the backup: paid orders granted once each', async (t: TestContext) => {
  const stripe = await startOfflineStripe();
  t.after(() => stripe.close());
  const original = await createTestDatabase();
  t.after(() => original.close());
  let service: TestService = await startTestService(original, { stripe });
  const pay = async (orders: OrderRow[]) => {
    for (const order of orders) {
      const event = paidEvent(order);
      stripe.addEvent({ ...event }, { delivered: true });
      assert.equal((await service.deliver(event)).status, 200);
    }
  };
  const processed = (database: TestDatabase, n: number) =>
    waitFor(
      `${n} events fulfilled`,
      async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events where status in ('processed', 'failed')`.execute(database.db);
        return rows[0]!.n === n;
      },
      { timeoutMs: 30_000 },
    );

  // Orders opened before the backup; some paid before it.
  const opened = await Promise.all(Array.from({ length: PAID_BEFORE + PAID_AFTER }, () => givenOrder(original)));
  await pay(opened.slice(0, PAID_BEFORE));
  await processed(original, PAID_BEFORE);

  // 1. The backup, and its time (pg_dump reads one snapshot taken as it starts).
  const backupAt = Date.now();
  const dump = join(dir, 'stripe-inbox.dump');
  await run('pg_dump', ['--format=custom', `--file=${dump}`, `--dbname=${original.url}`]);

  // 2. Business goes on: the rest paid, and orders opened and paid after the backup.
  const openedAfter = await Promise.all(Array.from({ length: OPENED_AFTER }, () => givenOrder(original)));
  await pay([...opened.slice(PAID_BEFORE), ...openedAfter]);
  await processed(original, PAID_BEFORE + PAID_AFTER + OPENED_AFTER);

  // 3. The database is lost; the service stops with it.
  await service.close();

  // 4. Restore into a fresh database and start the service on it.
  const restored = await createTestDatabase({ empty: true });
  t.after(() => restored.close());
  await run('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${restored.url}`, dump]);
  service = await startTestService(restored, { stripe });
  t.after(() => service.close());

  // 5. Reconcile since the backup's time, rounded up to whole minutes and a minute of margin.
  const minutes = Math.ceil((Date.now() - backupAt) / 60_000) + 1;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/reconcile.ts', '--since', `${minutes}m`, '--json'], {
    env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: restored.url, STRIPE_SECRET_KEY, STRIPE_API_BASE: stripe.url, LOG_LEVEL: 'silent' },
  });
  const reconciled = JSON.parse(stdout) as { listed: number; missing: number; claimed: number };
  t.diagnostic(`reconcile: ${JSON.stringify(reconciled)}`);
  await processed(restored, PAID_BEFORE + PAID_AFTER + OPENED_AFTER);

  const outcome = await grantsPerOrder(restored);
  t.diagnostic(`restored: ${JSON.stringify(outcome)}`);
  // Whatever the service's own start-up reconcile claimed first, every event after the backup came back.
  assert.deepEqual(outcome, { granted_once: PAID_BEFORE + PAID_AFTER, granted_twice: 0, failed_unknown: OPENED_AFTER });
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from stripe_events`.execute(restored.db);
  assert.equal(rows[0]!.n, PAID_BEFORE + PAID_AFTER + OPENED_AFTER);
});
