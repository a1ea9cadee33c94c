// The statuses of an event are declared once, in TypeScript (EVENT_STATUSES, src/db/schema.ts);
// the CHECK constraint that Postgres enforces must list the same ones, and the status summary the
// dashboard draws its cards from carries each of them, in that order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { EVENT_STATUSES } from '../../src/db/schema.js';
import { inboxStatusReader } from '../../src/events/read-model.js';
import { databaseForFile } from '../support/database.js';

const database = databaseForFile();

test('the CHECK constraint on stripe_events.status allows exactly EVENT_STATUSES', async () => {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_constraintdef(oid) as definition from pg_constraint where conname = 'stripe_events_status_known'`.execute(database.db);
  const allowed = [...(rows[0]?.definition ?? '').matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]);
  assert.deepEqual(allowed.sort(), [...EVENT_STATUSES].sort());
});

test('the status summary counts every status, in the declared order', async () => {
  assert.deepEqual(Object.keys((await inboxStatusReader(database.db)()).counts), [...EVENT_STATUSES]);
});
