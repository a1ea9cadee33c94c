// `npm test` drops what an earlier run on this machine left behind when it was killed before its
// clean-up, and nothing else. Fake earlier runs on the test server: marked as dead, alive, from
// another host, from an earlier boot, from another container on this kernel, and unmarked.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { dropLeftoverRuns, markRun, RUN_PREFIX, thisRun, type RunMark } from './run-databases.js';

const admin = new pg.Client({ connectionString: process.env.TEST_ADMIN_URL });
const created: string[] = [];

before(() => admin.connect());
after(async () => {
  for (const name of created) await admin.query(`drop database if exists "${name}" with (force)`);
  await admin.end();
});

/** A fake run: its template (marked, unless mark is undefined) and one clone. Returns its prefix. */
async function fakeRun(mark: RunMark | undefined): Promise<string> {
  const prefix = `${RUN_PREFIX}${randomBytes(4).toString('hex')}`;
  for (const name of [`${prefix}_template`, `${prefix}_${randomBytes(4).toString('hex')}`]) {
    await admin.query(`create database "${name}"`);
    created.push(name);
  }
  if (mark) await markRun(admin, `${prefix}_template`, mark);
  return prefix;
}

async function databasesOf(prefix: string): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string }>('select datname from pg_database where starts_with(datname, $1)', [prefix]);
  return rows.map((r) => r.datname);
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = execFile(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

test('drops every database of a run on this machine whose process is gone, and keeps the rest', async () => {
  const self = thisRun();
  const dead = await fakeRun({ ...self, pid: await deadPid() });
  const alive = await fakeRun(self);
  const elsewhere = await fakeRun({ ...self, host: `not-${self.host}`, pid: await deadPid() });
  const otherBoot = await fakeRun({ ...self, boot: 'an-earlier-boot', pid: await deadPid() });
  const otherContainer = await fakeRun({ ...self, pidNamespace: 'pid:[1]', pid: await deadPid() });
  const unmarked = await fakeRun(undefined);

  const dropped = await dropLeftoverRuns(admin);

  assert.ok(dropped.includes(dead));
  assert.deepEqual(await databasesOf(dead), []);
  for (const kept of [alive, elsewhere, otherBoot, otherContainer, unmarked]) {
    assert.ok(!dropped.includes(kept), `${kept} was dropped`);
    assert.equal((await databasesOf(kept)).length, 2, `${kept} lost a database`);
  }
  // This very run is alive: its template and the databases of the other test files stay.
  assert.ok(!dropped.includes(process.env.TEST_DB_PREFIX!));
});
