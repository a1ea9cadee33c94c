// CPU the Postgres backends of one database use over a window, read from /proc like the
// servers' own: a server that does less in Node but makes Postgres work harder is not cheaper.
// The backends are those connected to the database (pg_stat_activity) at the start or the end
// of the window; pools keep their connections, so a backend that lives only inside the window is
// rare, and one that ended inside it is counted up to the start only. Postgres must run on this
// machine (the default server, or the embedded one): elsewhere the figure is n/a.
import type pg from 'pg';
import { cpuSeconds } from './stats.js';

async function backendPids(pool: pg.Pool, database: string): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>(
    "select pid from pg_stat_activity where datname = $1 and backend_type = 'client backend' and pid <> pg_backend_pid()",
    [database],
  );
  return rows.map((r) => r.pid);
}

/** Starts a window; stop() returns the CPU seconds the database's backends used in it, or NaN. */
export async function postgresCpu(pool: pg.Pool, database: string): Promise<{ stop(): Promise<number> }> {
  const before = new Map((await backendPids(pool, database)).map((pid) => [pid, cpuSeconds(pid)]));
  return {
    async stop() {
      const after = await backendPids(pool, database);
      if ([...before.values()].some(Number.isNaN) || after.map(cpuSeconds).some(Number.isNaN)) return Number.NaN;
      let used = 0;
      for (const pid of after) used += cpuSeconds(pid) - (before.get(pid) ?? 0);
      return used;
    },
  };
}
