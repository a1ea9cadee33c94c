// An event whose fulfilment Postgres picks as a deadlock's victim is run again at once, without
// spending an attempt: it was not at fault. Seen between two instances whose batches locked one
// subscription's rows in opposite orders; under MAX_ATTEMPTS=1 the victim, a subscription's first
// event, ended 'failed' and its subscription read 'pending' though paid.
//
// The cycle is made by hand: another transaction holds the order's row, waits until the
// fulfilment waits for it, then asks for the event's row, which the fulfilment holds. The
// service's connections check for a deadlock after 5 s, this transaction's after a minute, so the
// fulfilment is the one Postgres rolls back, however slow the host.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { sql } from 'kysely';
import { finishedEvent, givenOrder, grantsOf, paidEvent } from '../support/factories.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

let database: TestDatabase;
let service: TestService;

before(async () => {
  database = await createTestDatabase();
  // Set before the service connects: only new sessions take a database's settings.
  await sql`alter database ${sql.id(database.name)} set deadlock_timeout = '5s'`.execute(database.db);
  service = await startTestService(database, { env: { MAX_ATTEMPTS: '1' } });
});
after(async () => {
  await service?.close();
  await database?.close();
});

test("a fulfilment rolled back as a deadlock's victim runs again at once: granted, no attempt spent, under MAX_ATTEMPTS=1", async () => {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  const other = new pg.Client({ connectionString: database.url });
  await other.connect();
  try {
    await other.query('begin');
    await other.query("set local deadlock_timeout = '60s'");
    await other.query('select 1 from orders where order_id = $1 for update', [order.order_id]);
    assert.equal((await service.deliver(event)).status, 200);

    // The fulfilment holds the event's row and waits for the order's.
    await waitFor('the fulfilment waiting for the order row', async () => {
      const { rows } = await other.query('select 1 from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))');
      return rows.length > 0;
    });
    // Closes the cycle; returns once Postgres has rolled the fulfilment back.
    await other.query('select 1 from stripe_events where event_id = $1 for update', [event.id]);
    await other.query('rollback');
  } finally {
    await other.end();
  }

  const row = await finishedEvent(database, event.id);
  assert.deepEqual([row.status, row.attempts, row.last_error], ['processed', 0, null], `${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
  assert.equal((await grantsOf(database, order.order_id)).length, 1);
});
