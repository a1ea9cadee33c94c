// A pg pool and the Kysely instance over it, with the timeouts every connection of the service
// and its scripts runs under.
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { preparingPool } from './prepared-statements.js';
import { deadlineEveryQuery } from './query-deadline.js';
import type { Database } from './schema.js';

export interface Db {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  close(): Promise<void>;
}

export interface DbOptions {
  /** Pool size; size it for HTTP requests plus worker concurrency plus graphile-worker's own clients. */
  maxConnections?: number;
  applicationName?: string;
  /**
   * The longest a query on any of the pool's connections (Kysely's, graphile-worker's, a
   * script's) may go without an answer before its connection is closed (src/db/query-deadline.ts).
   * Past statement_timeout, so that the server cancels a merely slow query first, with its own
   * error.
   */
  queryDeadlineMs?: number;
  /**
   * Commits answer before their WAL reaches disk (synchronous_commit off): for work whose every
   * write may be lost to a crash of Postgres at no cost but a repeat (notification deliveries).
   */
  asynchronousCommit?: boolean;
}

const STATEMENT_TIMEOUT_MS = 15_000;

export function openDatabase(connectionString: string, options: DbOptions = {}): Db {
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? 'stripe-inbox',
    // A request must fail fast with 503 when Postgres is gone, not hang until Stripe times out.
    connectionTimeoutMillis: 5_000,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    lock_timeout: 10_000,
    // A worker that died mid-transaction must not keep its event's row lock (the sweep's liveness
    // signal) for long: Postgres ends such sessions, and keepalives notice a vanished peer.
    idle_in_transaction_session_timeout: 60_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.asynchronousCommit && { options: '-c synchronous_commit=off' }),
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener that
  // would crash the process during a database restart. The next checkout reconnects.
  // The same for a checked-out client whose connection drops between queries (graphile-worker's
  // LISTEN client among them): the query in progress fails, the process must not.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  deadlineEveryQuery(pool, options.queryDeadlineMs ?? STATEMENT_TIMEOUT_MS + 5_000);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  return {
    pool,
    db,
    async close() {
      // Kysely ends the pool only if it ever used it; scripts that only migrate did not.
      await db.destroy();
      if (!pool.ended) await pool.end();
    },
  };
}
