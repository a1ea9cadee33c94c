// Two service processes started at the same instant on an empty database (docs/design.md,
// invariant 10): both come up, and each migration is applied exactly once. A start that cannot
// migrate says why.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { spawnService, type ChildService } from '../support/child-service.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { serviceMigrations } from '../../src/modules/index.js';

let database: TestDatabase;
const children: ChildService[] = [];

before(async () => {
  database = await createTestDatabase({ empty: true });
});
after(async () => {
  for (const child of children) child.process.kill('SIGKILL');
  await database.close();
});

test('two processes starting at once on an empty database both come up and migrate once', async () => {
  const started = await Promise.all([spawnService(database.url), spawnService(database.url)]);
  children.push(...started);
  for (const child of started) assert.equal((await fetch(`${child.url}/readyz`)).status, 200);

  const { rows } = await sql<{ version: number; n: number }>`
    select version, count(*)::int as n from schema_migrations group by version order by version`.execute(database.db);
  assert.deepEqual(
    rows,
    (await serviceMigrations()).map((m) => ({ version: m.version, n: 1 })),
  );
  const applied = started.flatMap((c) => c.logs.filter((l) => l.msg === 'migration applied'));
  assert.equal(applied.length, rows.length, 'each migration logged once, by whichever process got the lock');
  const { rows: worker } = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.migrations`.execute(database.db);
  assert.ok(worker[0]!.n > 0);
});

test('a start whose migration fails exits and says what failed and why', async () => {
  // The database has the first migration's tables but no record of it, as after a hand-made fix.
  const first = (await serviceMigrations())[0]!;
  await sql`delete from schema_migrations where version = ${first.version}`.execute(database.db);
  try {
    await assert.rejects(spawnService(database.url), (error: Error) => {
      assert.match(error.message, /service exited with 1 before starting/);
      assert.match(error.message, new RegExp(`failed to start: applying migration ${first.name}: .*already exists`));
      return true;
    });
  } finally {
    await sql`insert into schema_migrations (version, name, checksum) values (${first.version}, ${first.name}, ${first.checksum})`.execute(database.db);
  }
});
