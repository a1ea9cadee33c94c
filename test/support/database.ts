// One database per test file (or per test), cloned from the migrated template that test/run.ts
// made for this run. The runner drops every database with this run's prefix at the end.
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Kysely } from 'kysely';
import { openDatabase, type Db } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import type { BillingTables } from '../../src/modules/billing/tables.js';
import type { CreditTables } from '../../src/modules/credits/tables.js';
import type { LedgerTables } from '../../src/modules/ledger/tables.js';
import { databaseUrl } from './database-url.js';

/** Every module's tables beside the core's. */
type ServiceTables = LedgerTables & CreditTables & BillingTables;
export type ServiceDatabase = Database & ServiceTables;

/** Typed with every business module's tables: tests read orders, balances, subscriptions and grants. */
export interface TestDatabase extends Omit<Db, 'db'> {
  readonly db: Kysely<ServiceDatabase>;
  readonly url: string;
  readonly name: string;
}

function runSettings() {
  const { TEST_ADMIN_URL, TEST_DB_PREFIX, TEST_TEMPLATE_DB } = process.env;
  if (!TEST_ADMIN_URL || !TEST_DB_PREFIX || !TEST_TEMPLATE_DB) {
    throw new Error('run tests through `npm test` (or `npm test -- <file>`): it prepares the template database');
  }
  return { adminUrl: TEST_ADMIN_URL, prefix: TEST_DB_PREFIX, template: TEST_TEMPLATE_DB };
}

/** A fresh database on the test server: migrated (cloned from the template) unless `empty`. */
export async function createTestDatabase(options: { empty?: boolean; maxConnections?: number } = {}): Promise<TestDatabase> {
  const { adminUrl, prefix, template } = runSettings();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(options.empty ? `create database "${name}"` : `create database "${name}" template "${template}"`);
        break;
      } catch (error) {
        // 55006: another file is cloning the template right now; clones must take turns.
        if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error;
        await sleep(50 * attempt);
      }
    }
  } finally {
    await admin.end();
  }
  return openTestDatabase(databaseUrl(adminUrl, name), name, options);
}

/** A database as the tests use it: this run's (above), or one on another server, such as the HA cluster's. */
export function openTestDatabase(url: string, name: string, options: { maxConnections?: number } = {}): TestDatabase {
  const opened = openDatabase(url, { maxConnections: options.maxConnections ?? 20 });
  return { ...opened, db: opened.db.withTables<ServiceTables>(), url, name };
}

/**
 * A database of its own for this test file: created before the file's tests, closed after them.
 * Its members are read when a test runs, so the file can name it at the top.
 */
export function databaseForFile(options: { maxConnections?: number } = {}): TestDatabase {
  let current: TestDatabase | undefined;
  const open = () => {
    if (!current) throw new Error('databaseForFile(): the database is created by a before() hook; use it inside tests and hooks');
    return current;
  };
  before(async () => {
    current = await createTestDatabase(options);
  });
  after(async () => {
    await current?.close();
  });
  return {
    get pool() {
      return open().pool;
    },
    get db() {
      return open().db;
    },
    get url() {
      return open().url;
    },
    get name() {
      return open().name;
    },
    close: () => open().close(),
  };
}
