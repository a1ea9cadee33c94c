// Kysely's statements run as prepared statements (src/db/prepared-statements.ts). A migration that
// adds a column, the usual expand step of a rolling deploy, must not break a running process
// whose connections prepared them, one that changes a column's type may fail a statement once;
// and varying statement texts must not grow without bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { claimEvents, findEvent } from '../../src/events/event-store.js';
import { creditsModule } from '../../src/modules/credits/index.js';
import { givenOrder, incomingEvent, paidEvent } from '../support/factories.js';
import { databaseForFile } from '../support/database.js';
import { fulfilWith, handlersOf } from '../support/handlers.js';

// One connection, so every statement below runs on the connection that prepared the one before.
const database = databaseForFile({ maxConnections: 1 });

const preparedStatements = async () => {
  const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(database.db);
  return rows.map((r) => r.statement);
};

test('statements that name their columns are prepared and keep working after a migration adds a column', async () => {
  const starter = () => database.db.selectFrom('packages').selectAll().where('package_id', '=', 'starter').executeTakeFirstOrThrow();
  await starter();
  const event = paidEvent(await givenOrder(database));
  await claimEvents(database.db, [incomingEvent(event)], { maxAttempts: 5 });
  assert.equal((await findEvent(database.db, event.id))?.status, 'processing');
  assert.ok(
    (await preparedStatements()).some((s) => s.includes('from "stripe_events"')),
    'findEvent is a prepared statement',
  );

  // What a prepared `select *` does after the same migration (on a connection of its own): the
  // reason such statements are not prepared.
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const starQuery = { name: 'probe_star', text: 'select * from packages where package_id = $1', values: ['starter'] };
    await client.query(starQuery);
    await client.query('alter table packages add column probe_note text');
    await assert.rejects(client.query(starQuery), /cached plan must not change result type/);
  } finally {
    await client.end();
  }

  const prepared = await preparedStatements();
  await sql`alter table stripe_events add column probe_note text`.execute(database.db);
  assert.equal((await findEvent(database.db, event.id))?.event_id, event.id);
  assert.deepEqual(await preparedStatements(), prepared, 'the same connection, with its prepared statements');
  // A `select *` through Kysely is not prepared, so it simply returns the new column.
  assert.ok('probe_note' in (await starter()));
});

test('a statement prepared before a migration changed the type of a column it returns fails once on its connection, then is prepared again', async () => {
  // A connection of its own: the refused statement stays prepared on it until it closes.
  const own = openDatabase(database.url, { maxConnections: 1 });
  try {
    await sql`create table probe_types (id int primary key, doc jsonb not null)`.execute(own.db);
    await sql`insert into probe_types values (1, '{"a": 1}')`.execute(own.db);
    const read = async () => (await sql<{ doc: unknown }>`select doc from probe_types where id = ${1}`.execute(own.db)).rows;
    assert.deepEqual(await read(), [{ doc: { a: 1 } }]);
    await sql`alter table probe_types alter column doc type json using doc::json`.execute(own.db);
    await assert.rejects(read(), /cached plan must not change result type/);
    assert.deepEqual(await read(), [{ doc: { a: 1 } }]);
    assert.deepEqual(await read(), [{ doc: { a: 1 } }]);
  } finally {
    await own.close();
  }
});

test("a paid checkout's fulfilment runs prepared statements: the lock, the payments, the finish", async () => {
  // Two events, so the batch statements run (one event alone is fulfilled the same way).
  const events = [paidEvent(await givenOrder(database)), paidEvent(await givenOrder(database))];
  const fulfilled = await fulfilWith(database, handlersOf(creditsModule), events);
  assert.deepEqual(
    fulfilled.map((f) => f.row.status),
    ['processed', 'processed'],
  );
  const prepared = await preparedStatements();
  for (const [what, marker] of [
    ['the lock statement', 'for update'],
    ['the payments statement', 'insert into credit_grants'],
    ['the finish statement', 'update stripe_events e set'],
  ]) {
    assert.ok(
      prepared.some((s) => s.includes(marker!)),
      `${what} is a prepared statement`,
    );
  }
});

test('statements with `select *` or without parameters are not prepared, and one connection prepares at most 200', async () => {
  await database.db.selectFrom('orders').selectAll().where('order_id', '=', 'ord_none').execute();
  await sql`select 1 as one`.execute(database.db);
  const prepared = await preparedStatements();
  assert.ok(!prepared.some((s) => /select \*/.test(s)), 'no star statement prepared');
  assert.ok(!prepared.some((s) => s.includes('select 1 as one')), 'no parameterless statement prepared');

  // Texts that vary with their input (an `in` list of n items) stop being prepared at the cap.
  for (let n = 1; n <= 210; n++) {
    await database.db
      .selectFrom('orders')
      .select('order_id')
      .where(
        'order_id',
        'in',
        Array.from({ length: n }, (_, i) => `ord_${i}`),
      )
      .execute();
  }
  assert.equal((await preparedStatements()).length, 200);
});
