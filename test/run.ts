// `npm test`: finds a Postgres (DATABASE_URL, else 127.0.0.1:5432, else the embedded one), builds
// one migrated template database for this run, runs the test files with node's test runner (each
// file clones the template), then drops the databases this run created, and only those.
// `npm test -- test/http/webhook.test.ts` runs a subset.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../src/db/database.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { migrate } from '../src/db/migrate.js';
import { createLogger } from '../src/logger.js';
import { databaseUrl } from './support/database-url.js';

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return testFiles(path);
      return name.endsWith('.test.ts') ? [path] : [];
    })
    .sort();
}

async function main(): Promise<number> {
  let embedded: EmbeddedPostgres | undefined;
  let adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!(await reachable(adminUrl))) {
    if (process.env.DATABASE_URL) throw new Error(`DATABASE_URL is set but unreachable: ${new URL(adminUrl).host}`);
    process.stdout.write('# no Postgres at 127.0.0.1:5432: starting the embedded one\n');
    embedded = await startEmbeddedPostgres({ dataDir: '.data/test-postgres' });
    adminUrl = embedded.connectionString;
  }

  const prefix = `stripe_inbox_test_${randomBytes(4).toString('hex')}`;
  const template = `${prefix}_template`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${template}"`);
    const database = openDatabase(databaseUrl(adminUrl, template), { maxConnections: 2 });
    await migrate(database.pool, createLogger('warn'));
    await database.close();
    // Autovacuum visits a freshly migrated database, and a template with any session in it
    // cannot be cloned: closing it to connections keeps clones instant.
    await admin.query(`alter database "${template}" with allow_connections false`);

    const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : testFiles('test');
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
      stdio: 'inherit',
      env: { ...process.env, NODE_ENV: 'test', TEST_ADMIN_URL: adminUrl, TEST_DB_PREFIX: prefix, TEST_TEMPLATE_DB: template },
    });
    return await new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  } finally {
    const { rows } = await admin.query<{ datname: string }>('select datname from pg_database where datname like $1', [`${prefix}%`]);
    for (const { datname } of rows) await admin.query(`drop database if exists "${datname}" with (force)`);
    await admin.end();
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
