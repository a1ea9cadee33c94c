// sql/schema.txt is the schema every migration (ours and graphile-worker's) leaves, committed so
// that a change to the database shows in review. A migration that changes it without the file
// fails here; `UPDATE_SCHEMA=1 npm test -- test/db/schema-snapshot.test.ts` rewrites the file from
// a freshly migrated database, to review and commit with the migration. Its header says who owns
// each table, from the modules' `tables`; docs/migrations.md lists the same owners.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { businessModules } from '../../src/modules/index.js';
import { databaseForFile } from '../support/database.js';
import { describeSchema, tableOwners } from '../support/schema-description.js';

const SNAPSHOT = new URL('../../sql/schema.txt', import.meta.url);
const MIGRATIONS_DOC = new URL('../../docs/migrations.md', import.meta.url);
const database = databaseForFile();

test('the migrated schema is the one committed in sql/schema.txt', async () => {
  const actual = await describeSchema(database.db, businessModules);
  if (process.env.UPDATE_SCHEMA === '1') await writeFile(SNAPSHOT, actual);
  const committed = await readFile(SNAPSHOT, 'utf8').catch(() => '');
  assert.equal(actual, committed, 'the schema changed: review it, then UPDATE_SCHEMA=1 npm test -- test/db/schema-snapshot.test.ts');
});

test('each table a module declares exists and has that one owner, and docs/migrations.md names the same owners', async () => {
  const declared = businessModules.flatMap((module) => (module.tables ?? []).map((table) => [table, module.name]));
  assert.equal(new Set(declared.map(([table]) => table)).size, declared.length, `a table declared twice: ${JSON.stringify(declared)}`);
  const owners = await tableOwners(database.db, businessModules);
  const found = new Set(owners.map(([table]) => table));
  assert.deepEqual(
    declared.filter(([table]) => !found.has(table!)),
    [],
    'declared by a module, but no migration creates it',
  );
  // The doc's table of owners: rows of the form | `table` | owner |.
  const doc = await readFile(MIGRATIONS_DOC, 'utf8');
  const listed = [...doc.matchAll(/^\| `(\w+)` \| (\w+) \|/gm)].map((m) => [m[1]!, m[2]!]);
  assert.deepEqual(listed.sort(), owners.map(([table, owner]) => [table, owner]).sort());
});
