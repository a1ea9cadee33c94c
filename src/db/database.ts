// A pg pool and the Kysely instance over it, with the timeouts every connection of the service
// and its scripts runs under.
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { preparingPool } from './prepared-statements.js';
import { deadlineEveryQuery, withDeadline } from './query-deadline.js';
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
  /**
   * The URL goes through a pooler in transaction mode (src/db/connection-pooler.ts): no named
   * prepared statements, and no session settings, which would stay on a server connection that
   * other clients of the pooler get next. The pooled pools run short transactions only; what
   * bounds them there is the query deadline, and whatever the role's own settings say
   * (docs/deploy.md, "Behind a connection pooler").
   */
  transactionPooled?: boolean;
}

const STATEMENT_TIMEOUT_MS = 15_000;
const CONNECT_TIMEOUT_MS = 5_000;

export function openDatabase(connectionString: string, options: DbOptions = {}): Db {
  const settings = sessionSettings(options);
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName ?? 'stripe-inbox',
    // A request must fail fast with 503 when Postgres is gone, not hang until Stripe times out.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // The session's settings, before the pool hands a new connection out; a failure fails that
    // checkout. Its own deadline: the connect timeout ended with the connection's start-up.
    // (@types/pg types the hook as returning void; pg-pool awaits the promise it returns.)
    ...(!options.transactionPooled && {
      onConnect: ((client: pg.ClientBase) => withDeadline(client, client.query(settings), CONNECT_TIMEOUT_MS)) as (client: pg.ClientBase) => void,
    }),
  });
  // An idle client losing its connection emits 'error' on the pool; without a listener that
  // would crash the process during a database restart. The next checkout reconnects.
  // The same for a checked-out client whose connection drops between queries (graphile-worker's
  // LISTEN client among them): the query in progress fails, the process must not.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  deadlineEveryQuery(pool, options.queryDeadlineMs ?? STATEMENT_TIMEOUT_MS + 5_000);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: options.transactionPooled ? pool : preparingPool(pool) }) });
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

/**
 * Every session's settings, as one message sent once per connection. Set in the session rather
 * than as startup parameters: PgBouncer refuses a connection whose startup packet carries any it
 * does not track ("unsupported startup parameter: statement_timeout"), in session mode too, and
 * ignore_startup_parameters would only drop them without a word.
 */
function sessionSettings(options: DbOptions): string {
  return [
    `set statement_timeout = ${STATEMENT_TIMEOUT_MS}`,
    'set lock_timeout = 10000',
    // A worker that died mid-transaction must not keep its event's row lock (the sweep's liveness
    // signal) for long: Postgres ends such sessions, and keepalives notice a vanished peer.
    'set idle_in_transaction_session_timeout = 60000',
    ...(options.asynchronousCommit ? ['set synchronous_commit = off'] : []),
  ].join('; ');
}
