// What `npm run status` says of the sweep: when it last ran, when it is next due, and whether a
// worker is there to run it. The sweep runs on graphile-worker's crontab (SWEEP_CRON, UTC, by the
// minute) in any worker process, so before the first tick after a worker starts there is no run
// to show, and that is not a fault. What is: no worker at all. Its signal is the worker's own
// sessions: every running worker holds graphile-worker's LISTEN connection open on its pool
// (application_name stripe-inbox-worker, src/db/pools.ts), and Postgres drops it with the
// process. An age threshold on the last run would take a stopped worker for a late one, or cry
// wolf for every SWEEP_CRON less frequent than its guess.
import { parseCrontab } from 'graphile-worker';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { applicationNameOf } from '../db/pools.js';

const MINUTE_MS = 60_000;
/** A crontab that names no minute within a year (`0 0 30 2 *`) is never due. */
const LOOKAHEAD_MINUTES = 366 * 24 * 60;

/** Worker processes connected to this database now (each one's LISTEN session at least). */
export async function workersConnected(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = ${applicationNameOf('worker')}`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The first minute after `after` that SWEEP_CRON names, as graphile-worker's crontab matches it (UTC). */
export function nextSweepAt(sweepCron: string, after: Date): Date | null {
  const [item] = parseCrontab(`${sweepCron} sweep`);
  const at = new Date(Math.floor(after.getTime() / MINUTE_MS) * MINUTE_MS);
  for (let i = 0; i < LOOKAHEAD_MINUTES; i++) {
    at.setTime(at.getTime() + MINUTE_MS);
    if (item!.match({ min: at.getUTCMinutes(), hour: at.getUTCHours(), date: at.getUTCDate(), month: at.getUTCMonth() + 1, dow: at.getUTCDay() })) return at;
  }
  return null;
}

export interface SweepState {
  last_sweep_at: string | null;
  next_sweep_at: string | null;
  workers_connected: number;
}

export async function sweepState(db: Kysely<Database>, lastSweepAt: string | null, sweepCron: string, now = new Date()): Promise<SweepState> {
  return { last_sweep_at: lastSweepAt, next_sweep_at: nextSweepAt(sweepCron, now)?.toISOString() ?? null, workers_connected: await workersConnected(db) };
}

/** One line: the last run, or why there is none yet, and a warning when no worker would run the next. */
export function describeSweep({ last_sweep_at, next_sweep_at, workers_connected }: SweepState, sweepCron: string): string {
  const schedule = `SWEEP_CRON '${sweepCron}'`;
  if (workers_connected === 0) {
    return `${last_sweep_at ?? 'never'}  ← no worker is connected to this database, so no sweep runs: start one (npm start, or ROLE=worker)`;
  }
  const due = next_sweep_at === null ? `never due (${schedule} names no minute within a year)` : `due at ${next_sweep_at} (${schedule})`;
  return last_sweep_at === null ? `none yet: a worker is running, the first is ${due}` : `${last_sweep_at}, the next is ${due}`;
}
