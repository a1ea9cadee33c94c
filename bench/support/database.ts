// A throwaway database per bench part on the Postgres server: created with a random name,
// migrated with the service's own migrate(), dropped at the end (only the one it created). Each is
// marked with the bench's process, as `npm test` marks its own (test/support/run-databases.ts), so
// that the next bench drops what a killed one (SIGKILL) left behind, and nothing else.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import { createLogger } from '../../src/logger.js';
import { onCleanup } from './cleanup.js';
import { serviceMigrations } from '../../src/modules/index.js';
import { leftBehind, markRun } from '../../test/support/run-databases.js';

export const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const BENCH_DB_PREFIX = 'stripe_inbox_bench_';

export interface BenchDatabase extends Db {
  readonly url: string;
  readonly name: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

export function databaseUrl(serverUrl: string, name: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

async function withAdmin<T>(serverUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/** `settings`: ALTER DATABASE … SET for each (`--db-setting`); sessions opened after it see them. */
export async function createBenchDatabase(
  serverUrl: string,
  options: { maxConnections?: number; settings?: Record<string, string> } = {},
): Promise<BenchDatabase> {
  const name = BENCH_DB_PREFIX + randomBytes(4).toString('hex');
  await withAdmin(serverUrl, async (admin) => {
    await admin.query(`create database "${name}"`);
    await markRun(admin, name);
  });
  const url = databaseUrl(serverUrl, name);
  const opened = openDatabase(url, { maxConnections: options.maxConnections ?? 10, applicationName: 'stripe-inbox-bench' });
  const drop = onCleanup(`database ${name}`, async () => {
    await opened.close().catch(() => {});
    // FORCE: a child that was killed may leave a session behind for a moment.
    await withAdmin(serverUrl, (admin) => admin.query(`drop database if exists "${name}" with (force)`));
  });
  try {
    await withAdmin(serverUrl, async (admin) => {
      for (const [setting, value] of Object.entries(options.settings ?? {})) {
        await admin.query(`alter database "${name}" set ${setting} = ${admin.escapeLiteral(value)}`);
      }
    });
    await migrate(opened.pool, createLogger('silent'), await serviceMigrations(), { runWorkerMigrations });
  } catch (error) {
    await drop();
    throw new Error(`setting up bench database ${name}`, { cause: error });
  }
  return { ...opened, url, name, drop };
}

/** Drops the bench databases of earlier runs on this machine whose process is gone; returns their names. */
export async function dropLeftoverBenchDatabases(serverUrl: string): Promise<string[]> {
  return withAdmin(serverUrl, async (admin) => {
    const names = await leftBehind(admin, `${BENCH_DB_PREFIX.replaceAll('_', '\\_')}%`);
    for (const name of names) await admin.query(`drop database if exists "${name}" with (force)`);
    return names;
  });
}

/** Server facts for the report header. */
export async function serverFacts(serverUrl: string): Promise<Record<string, string>> {
  return withAdmin(serverUrl, async (admin) => {
    const { rows } = await admin.query<{ name: string; setting: string; unit: string | null }>(
      `select name, setting, unit from pg_settings
       where name in ('server_version', 'shared_buffers', 'synchronous_commit', 'fsync', 'wal_sync_method', 'max_connections')`,
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024} MB` : r.setting]));
  });
}
