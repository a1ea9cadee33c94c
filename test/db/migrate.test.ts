// migrate(): two processes starting at once on an empty database apply each migration once
// (advisory lock), graphile-worker's schema comes along, a later run applies nothing, and an
// applied migration whose file changed stops start-up (docs/design.md, invariant 10, and
// docs/migrations.md). A business module's migrations join the core's sequence, and a version
// taken twice is refused.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate, readMigrations, type Migration } from '../../src/db/migrate.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { serviceMigrations } from '../../src/modules/index.js';

const logger = createLogger('silent');
let database: TestDatabase;
let migrations: Migration[];
const pools: Db[] = [];
const impatient: pg.Pool[] = [];

/** Another process's pool on the same database. */
function secondPool(): Db {
  const db = openDatabase(database.url, { maxConnections: 3 });
  pools.push(db);
  return db;
}

before(async () => {
  database = await createTestDatabase({ empty: true });
  migrations = await serviceMigrations();
  assert.ok(migrations.length > 0);
});
after(async () => {
  for (const db of pools) await db.close();
  for (const pool of impatient) await pool.end();
  await database.close();
});

async function appliedVersions(): Promise<Array<{ version: number; name: string; checksum: string }>> {
  const { rows } = await sql<{ version: number; name: string; checksum: string }>`
    select version, name, checksum from schema_migrations order by version`.execute(database.db);
  return rows;
}

test('two migrate() runs started at once on an empty database apply each migration exactly once', async () => {
  const results = await Promise.all([
    migrate(database.pool, logger, migrations, { runWorkerMigrations }),
    migrate(secondPool().pool, logger, migrations, { runWorkerMigrations }),
  ]);

  // One run applied everything, the other found it done: no migration was applied twice.
  const applied = results.flatMap((r) => r.applied).sort();
  assert.deepEqual(applied, migrations.map((m) => m.name).sort());
  assert.deepEqual(
    await appliedVersions(),
    migrations.map(({ version, name, checksum }) => ({ version, name, checksum })),
  );

  const { rows } = await sql<{ jobs: string | null; events: string | null }>`
    select to_regclass('graphile_worker.jobs')::text as jobs, to_regclass('public.stripe_events')::text as events`.execute(database.db);
  assert.deepEqual(rows[0], { jobs: 'graphile_worker.jobs', events: 'stripe_events' });
});

test('a third run applies nothing', async () => {
  assert.deepEqual(await migrate(secondPool().pool, logger, migrations, { runWorkerMigrations }), { applied: [] });
  assert.equal((await appliedVersions()).length, migrations.length);
});

// The timeout turns a lock kept by the refusal (the last migrate() would wait forever) into a failure.
test('an applied migration whose file changed makes migrate() refuse, and releases its lock', { timeout: 15_000 }, async () => {
  const [first] = migrations;
  await sql`update schema_migrations set checksum = 'edited' where version = ${first!.version}`.execute(database.db);
  try {
    await assert.rejects(
      migrate(database.pool, logger, migrations, { runWorkerMigrations }),
      new RegExp(`migration ${first!.name} was changed after it was applied`),
    );
  } finally {
    await sql`update schema_migrations set checksum = ${first!.checksum} where version = ${first!.version}`.execute(database.db);
  }
  // A fixed release in another process can still take the lock: the refusal did not keep it.
  assert.deepEqual(await migrate(secondPool().pool, logger, migrations, { runWorkerMigrations }), { applied: [] });
});

/** A pool whose requests may wait for a lock or run for a fraction of a second only. */
function impatientPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: database.url, max: 2, lock_timeout: 100, statement_timeout: 200 });
  pool.on('error', () => {});
  impatient.push(pool);
  return pool;
}

test("a start that waits for another's migrations longer than a request may wait still migrates", async () => {
  // The first process holds the migration lock until `release` is called.
  let release!: () => void;
  const holding = new Promise<void>((resolve) => (release = resolve));
  const first = migrate(database.pool, logger, migrations, { runWorkerMigrations: () => holding });
  await waitFor('the first process to hold the migration lock', async () => (await lockWaiters()).holders > 0);

  const second = migrate(impatientPool(), logger, migrations, { runWorkerMigrations });
  let gaveUp: Error | undefined;
  second.catch((error: Error) => (gaveUp = error));
  try {
    await waitFor('the second process to have waited for the lock well past its pool timeouts', async () => {
      if (gaveUp) throw gaveUp;
      return (await lockWaiters()).waitedLong;
    });
  } finally {
    release();
  }
  assert.deepEqual(await first, { applied: [] });
  assert.deepEqual(await second, { applied: [] });
});

test('a migration may run longer than a request may', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'module-migrations-'));
  try {
    writeFileSync(path.join(dir, '9100_slow_backfill.sql'), 'select pg_sleep(0.5);');
    const withSlow = await readMigrations([{ name: 'slow', migrations: pathToFileURL(dir + '/') }]);
    assert.deepEqual(await migrate(impatientPool(), logger, withSlow, { runWorkerMigrations }), { applied: ['9100_slow_backfill.sql'] });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

/** Who holds the migration lock, and whether a waiter has waited over half a second for it. */
async function lockWaiters(): Promise<{ holders: number; waitedLong: boolean }> {
  const { rows } = await sql<{ holders: number; waited_long: boolean }>`
    select (select count(*)::int from pg_locks l where l.locktype = 'advisory' and l.granted
              and l.database = (select oid from pg_database where datname = current_database())) as holders,
           exists (select 1 from pg_stat_activity a
                    where a.datname = current_database() and a.wait_event = 'advisory'
                      and clock_timestamp() - a.query_start > interval '500 ms') as waited_long`.execute(database.db);
  return { holders: rows[0]!.holders, waitedLong: rows[0]!.waited_long };
}

test('a module migration that takes a version the core or another module has is refused', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'module-migrations-'));
  try {
    writeFileSync(path.join(dir, '0001_clash.sql'), 'select 1;');
    await assert.rejects(
      readMigrations([{ name: 'clash', migrations: pathToFileURL(dir + '/') }]),
      /migrations 0001_inbox_and_ledger.sql and 0001_clash.sql share version 1/,
    );
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test("a module's migrations are applied in the core's sequence of versions", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'module-migrations-'));
  try {
    writeFileSync(path.join(dir, '9001_module_table.sql'), 'create table module_things (id int primary key);');
    const withModule = await readMigrations([{ name: 'things', migrations: pathToFileURL(dir + '/') }]);
    assert.deepEqual(withModule.slice(0, -1), await readMigrations([]));
    assert.deepEqual(await migrate(database.pool, logger, withModule, { runWorkerMigrations }), { applied: ['9001_module_table.sql'] });
    const { rows } = await sql<{ t: string | null }>`select to_regclass('public.module_things')::text as t`.execute(database.db);
    assert.equal(rows[0]!.t, 'module_things');
  } finally {
    rmSync(dir, { recursive: true });
  }
});
