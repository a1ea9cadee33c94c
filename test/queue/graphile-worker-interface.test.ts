// The part of graphile-worker's public interface this service stands on (src/queue/job-queue.ts):
// the columns of the graphile_worker.jobs view, the fields of job_spec in the order we build it,
// and the SQL functions we call. A graphile-worker release that changes any of them fails here,
// by name, instead of leaving a sweep that silently reclaims too much or nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { databaseForFile } from '../support/database.js';

const database = databaseForFile();

test('the jobs view has the columns the sweep, status and prune read', async () => {
  const { rows } = await sql<{ column_name: string; data_type: string }>`
    select column_name, data_type from information_schema.columns
    where table_schema = 'graphile_worker' and table_name = 'jobs'`.execute(database.db);
  const columns = Object.fromEntries(rows.map((r) => [r.column_name, r.data_type]));
  for (const [name, type] of Object.entries({
    id: 'bigint',
    task_identifier: 'text',
    key: 'text',
    created_at: 'timestamp with time zone',
    locked_at: 'timestamp with time zone',
    attempts: 'smallint',
    max_attempts: 'smallint',
  })) {
    assert.equal(columns[name], type, `graphile_worker.jobs.${name}`);
  }
});

test('job_spec has the fields add_jobs is given, in that order', async () => {
  const { rows } = await sql<{ name: string }>`
    select a.attname as name from pg_attribute a
    where a.attrelid = 'graphile_worker.job_spec'::regclass and a.attnum > 0 and not a.attisdropped
    order by a.attnum`.execute(database.db);
  assert.deepEqual(
    rows.map((r) => r.name),
    ['identifier', 'payload', 'queue_name', 'run_at', 'max_attempts', 'job_key', 'priority', 'flags'],
  );
});

test('the functions we call exist with the arguments we pass', async () => {
  const { rows } = await sql<{ signature: string }>`
    select p.oid::regprocedure::text as signature from pg_proc p
    where p.pronamespace = 'graphile_worker'::regnamespace
      and p.proname in ('add_job', 'add_jobs', 'complete_jobs', 'permanently_fail_jobs', 'reschedule_jobs')
    order by 1`.execute(database.db);
  assert.deepEqual(
    rows.map((r) => r.signature),
    [
      'graphile_worker.add_job(text,json,text,timestamp with time zone,integer,text,integer,text[],text)',
      'graphile_worker.add_jobs(graphile_worker.job_spec[],boolean)',
      'graphile_worker.complete_jobs(bigint[])',
      'graphile_worker.permanently_fail_jobs(bigint[],text)',
      'graphile_worker.reschedule_jobs(bigint[],timestamp with time zone,integer,integer,integer)',
    ],
  );
});

test('a keyed job added through add_jobs shows in the view under its key until completed', async () => {
  const { rows } = await sql<{ id: string }>`
    select id from graphile_worker.add_jobs(array[row('process_stripe_event', '[]'::json, null, null, 3, 'interface-test', null, null)::graphile_worker.job_spec])`.execute(
    database.db,
  );
  const { rows: view } = await sql<{ key: string; task_identifier: string; attempts: number; max_attempts: number }>`
    select key, task_identifier, attempts, max_attempts from graphile_worker.jobs where id = ${rows[0]!.id}`.execute(database.db);
  assert.deepEqual(view, [{ key: 'interface-test', task_identifier: 'process_stripe_event', attempts: 0, max_attempts: 3 }]);
  await sql`select graphile_worker.complete_jobs(array[${rows[0]!.id}]::bigint[])`.execute(database.db);
  const { rows: gone } = await sql`select 1 from graphile_worker.jobs where key = 'interface-test'`.execute(database.db);
  assert.deepEqual(gone, []);
});
