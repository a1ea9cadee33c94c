// sql/schema.txt is the schema every migration (ours and graphile-worker's) leaves, committed so
// that a change to the database shows in review. A migration that changes it without the file
// fails here; `UPDATE_SCHEMA=1 npm test -- test/db/schema-snapshot.test.ts` rewrites the file from
// a freshly migrated database, to review and commit with the migration.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { databaseForFile } from '../support/database.js';
import { describeSchema } from '../support/schema-description.js';

const SNAPSHOT = new URL('../../sql/schema.txt', import.meta.url);
const database = databaseForFile();

test('the migrated schema is the one committed in sql/schema.txt', async () => {
  const actual = await describeSchema(database.db);
  if (process.env.UPDATE_SCHEMA === '1') await writeFile(SNAPSHOT, actual);
  const committed = await readFile(SNAPSHOT, 'utf8').catch(() => '');
  assert.equal(actual, committed, 'the schema changed: review it, then UPDATE_SCHEMA=1 npm test -- test/db/schema-snapshot.test.ts');
});
