// Applies the core's sql/NNNN_*.sql and the business modules' migrations in one sequence of
// versions, each in its own transaction, under an advisory lock so two processes starting at once
// apply each migration once; then graphile-worker's own migrations, which the caller hands in
// (src/queue/worker-migrations.ts) so that src/db/ knows nothing of the worker or the modules.
// Forward-only and expand/contract (docs/migrations.md): a release must keep working against
// the schema of the next one, because two versions run at once during a rolling deploy.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from '../logger.js';
import { withoutDeadline } from './query-deadline.js';

const SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));
// Arbitrary but fixed: every stripe-inbox process must use the same key.
const MIGRATION_LOCK_KEY = 7_031_337_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

/** A folder of migrations beside the core's: a business module's (its BusinessModule fits). */
export interface MigrationSource {
  /** Whose migrations they are. */
  name: string;
  /** The folder of NNNN_name.sql files, as a file: URL; none, no migrations. */
  migrations?: URL;
}

/**
 * This release's migrations: the core's (sql/) and each source's folder, sorted by version. Two
 * files with one version are refused: schema_migrations knows a migration by its version.
 */
export async function readMigrations(sources: readonly MigrationSource[]): Promise<Migration[]> {
  const folders = [SQL_DIR, ...sources.flatMap((source) => (source.migrations ? [fileURLToPath(source.migrations)] : []))];
  const migrations = (await Promise.all(folders.map(readFolder))).flat().sort((a, b) => a.version - b.version);
  for (const [i, migration] of migrations.entries()) {
    const next = migrations[i + 1];
    if (next?.version === migration.version) {
      throw new Error(`migrations ${migration.name} and ${next.name} share version ${migration.version}: give the newer one the next free number`);
    }
  }
  return migrations;
}

async function readFolder(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (name) => {
      const sql = await readFile(path.join(dir, name), 'utf8');
      return { version: Number(name.slice(0, 4)), name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

export interface MigrateResult {
  applied: string[];
}

export interface MigrateOptions {
  /**
   * graphile-worker's own migrations, run after ours under the same lock: the service's are
   * runWorkerMigrations (src/queue/worker-migrations.ts).
   */
  runWorkerMigrations: (pool: pg.Pool, logger: Logger) => Promise<void>;
}

/** Applies `migrations` (readMigrations) that the database does not have yet. */
export async function migrate(
  pool: pg.Pool,
  logger: Logger,
  migrations: readonly Migration[],
  { runWorkerMigrations }: MigrateOptions,
): Promise<MigrateResult> {
  const client = await pool.connect();
  let failed = false;
  try {
    // Waits on purpose for as long as another start's migrations take, and runs statements that
    // may rewrite a big table: the pool's query deadline (query-deadline.ts) is not for this.
    return await withoutDeadline(client, () => migrateOn(client, logger, migrations, runWorkerMigrations, pool));
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    // A failure may leave this session in a transaction or holding the lock: end it.
    client.release(failed);
  }
}

async function migrateOn(
  client: pg.PoolClient,
  logger: Logger,
  migrations: readonly Migration[],
  runWorkerMigrations: MigrateOptions['runWorkerMigrations'],
  pool: pg.Pool,
): Promise<MigrateResult> {
  // Session-level lock on a dedicated client: held across the per-migration transactions and
  // released even if this process dies (the session ends). The pool's timeouts are a request's
  // budget: a process that starts while another migrates waits as long as that takes, so they
  // are lifted for this wait only (SET LOCAL ends with the transaction; the lock does not).
  await client.query('begin');
  await client.query('set local lock_timeout = 0');
  await client.query('set local statement_timeout = 0');
  await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  await client.query('commit');
  try {
    await client.query(`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      checksum text not null,
      applied_at timestamptz not null default now())`);
    const { rows } = await client.query<{ version: number; name: string; checksum: string }>('select version, name, checksum from schema_migrations');
    const done = new Map(rows.map((r) => [r.version, r]));
    const applied: string[] = [];
    for (const m of migrations) {
      const previous = done.get(m.version);
      if (previous) {
        // An applied migration that was edited means this release expects a schema the
        // database does not have: refuse to start rather than run on a half-known schema.
        if (previous.checksum !== m.checksum) {
          throw new Error(`migration ${m.name} was changed after it was applied; add a new migration instead`);
        }
        continue;
      }
      await client.query('begin');
      try {
        // A migration may rewrite a big table for longer than a request may run. Its wait for a
        // table lock keeps the pool's bound: an ALTER queued behind a long transaction would
        // hold every query on that table behind it, so it gives up and start-up fails instead.
        await client.query('set local statement_timeout = 0');
        await client.query(m.sql);
        await client.query('insert into schema_migrations (version, name, checksum) values ($1, $2, $3)', [m.version, m.name, m.checksum]);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw new Error(`applying migration ${m.name}`, { cause: error });
      }
      applied.push(m.name);
      logger.info({ migration: m.name }, 'migration applied');
    }
    // Versions newer than ours were applied by the next release during a rolling deploy; by
    // the expand/contract rule they are compatible with this code.
    const known = new Set(migrations.map((m) => m.version));
    const newer = rows.filter((r) => !known.has(r.version)).map((r) => r.name);
    if (newer.length > 0) logger.warn({ migrations: newer }, 'database has migrations newer than this release');

    await runWorkerMigrations(pool, logger);
    return { applied };
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}
