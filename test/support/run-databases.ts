// Dropping a test run's databases: its own at its end (test/run.ts), and those an earlier
// `npm test` left behind when it was killed before its clean-up (a SIGKILL, a closed terminal, a
// crashed runner). Each run marks its template database with who made it; a later run drops a
// run's databases only when the mark names this machine (the same host, boot and process
// namespace, so another container on the same kernel is another machine) and a process that no
// longer exists. Anything else is left alone: a run on another machine sharing the server, a run
// still going, a database without the mark. The bench marks each of its databases the same way
// (bench/support/database.ts).
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type pg from 'pg';

/** The name every run's databases start with: `stripe_inbox_test_<8 hex>`, then `_template` or `_<8 hex>`. */
export const RUN_PREFIX = 'stripe_inbox_test_';
const TEMPLATE_NAME = /^(stripe_inbox_test_[0-9a-f]{8})_template$/;

export interface RunMark {
  pid: number;
  host: string;
  /** Linux's boot id: a pid names the same process only within one boot. Empty where unknown. */
  boot: string;
  /** Linux's pid namespace: containers on one kernel share the boot id, not their pids. */
  pidNamespace: string;
}

/** What `read` finds, or '' where this system has no such thing. */
function orEmpty(read: () => string): string {
  try {
    return read().trim();
  } catch {
    return '';
  }
}

export function thisRun(): RunMark {
  return {
    pid: process.pid,
    host: hostname(),
    boot: orEmpty(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidNamespace: orEmpty(() => readlinkSync('/proc/self/ns/pid')),
  };
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Marks a database with the run's process, so a later run can tell whether its maker still runs. */
export async function markRun(admin: pg.Client, database: string, mark: RunMark = thisRun()): Promise<void> {
  // COMMENT takes no parameters: the mark goes in as an escaped literal.
  await admin.query(`comment on database "${database}" is ${admin.escapeLiteral(JSON.stringify(mark))}`);
}

function parseMark(text: string | null): RunMark | undefined {
  try {
    const mark = JSON.parse(text ?? '') as Partial<RunMark>;
    const complete = typeof mark.pid === 'number' && [mark.host, mark.boot, mark.pidNamespace].every((field) => typeof field === 'string');
    return complete ? (mark as RunMark) : undefined;
  } catch {
    return undefined;
  }
}

/** The databases named `like` (a LIKE pattern) whose mark names this machine and a process that is gone. */
export async function leftBehind(admin: pg.Client, like: string, self: RunMark = thisRun()): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string; mark: string | null }>(
    "select datname, shobj_description(oid, 'pg_database') as mark from pg_database where datname like $1",
    [like],
  );
  return rows
    .filter(({ mark: text }) => {
      const mark = parseMark(text);
      const here = mark !== undefined && mark.host === self.host && mark.boot === self.boot && mark.pidNamespace === self.pidNamespace;
      return here && !processExists(mark.pid);
    })
    .map((row) => row.datname);
}

/** Drops the databases of runs that ended without cleaning up; returns their prefixes. */
export async function dropLeftoverRuns(admin: pg.Client, self: RunMark = thisRun()): Promise<string[]> {
  const gone: string[] = [];
  for (const template of await leftBehind(admin, `${RUN_PREFIX}%\\_template`, self)) {
    const prefix = TEMPLATE_NAME.exec(template)?.[1];
    if (!prefix) continue;
    await dropRunDatabases(admin, prefix);
    gone.push(prefix);
  }
  return gone;
}

/** Drops every database of one run (`<prefix>_*`), its template last: a run that dies in here is still found next time. */
export async function dropRunDatabases(admin: pg.Client, prefix: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${prefix}\\_%`]);
  const template = `${prefix}_template`;
  const ordered = rows.map((d) => d.datname).sort((a, b) => Number(a === template) - Number(b === template));
  for (const name of ordered) await admin.query(`drop database if exists "${name}" with (force)`);
}
