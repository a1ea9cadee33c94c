// Which of the service's connections may go through a connection pooler in transaction mode
// (PgBouncer's pool_mode=transaction, Supavisor's port 6543, Neon's -pooler host), and where the
// rest go. Such a pooler hands a client a server connection for one transaction only, so nothing
// tied to a session survives between two transactions: graphile-worker's LISTEN, the migrations'
// advisory lock (taken on one server connection, released on another, or never), SET, and named
// prepared statements (PgBouncer < 1.21). Short transactions, which is all the intake, API and
// notification pools run, work. So:
// - DATABASE_URL in transaction mode with DATABASE_DIRECT_URL set: the worker, migrations and
//   scripts use the direct URL; the other pools use DATABASE_URL without session state.
// - DATABASE_URL in transaction mode without it: start-up is refused, naming both fixes.
// - DATABASE_DIRECT_URL set: the worker, migrations and scripts use it whatever DATABASE_URL is.
//
// Nothing in the protocol says "this is a pooler", so it is found out by what one does: client A
// reads its server's pid; client B opens a transaction, which pins a server connection, by
// default (PgBouncer's LIFO reuse) the one A just released, else the oldest idle one; A reads its
// pid again. A session, direct or through a pooler in session mode, keeps its server for its
// life: the pid never changes and B never sees A's. In transaction mode A's pid changes, or B got
// A's server. A few rounds cover another client's transaction slipping in between.
import pg from 'pg';

const PROBE_ROUNDS = 3;
// A probe a healthy server answers in milliseconds; a database that cannot be reached fails here
// as it would at the first query.
const PROBE_TIMEOUT_MS = 5_000;

export interface DatabaseUrls {
  /** Intake, API and notifications: transactions only, so a transaction-mode pooler may serve them. */
  readonly url: string;
  /** The worker (LISTEN, prepared statements), migrations (advisory lock) and scripts. */
  readonly sessionUrl: string;
  /** `url` goes through a pooler in transaction mode: its connections keep no session state. */
  readonly transactionPooled: boolean;
}

/** DATABASE_URL (or DATABASE_DIRECT_URL) cannot serve the service as configured. */
export class PoolerModeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoolerModeError';
  }
}

const TRANSACTION_MODE = 'goes through a pooler in transaction mode (one client’s queries ran on different server connections)';

/** Where each kind of connection goes, after probing `url` (and `directUrl`, when given). */
export async function resolveDatabaseUrls(url: string, directUrl: string | undefined): Promise<DatabaseUrls> {
  const probe = (variable: string, target: string) =>
    isTransactionPooled(target).catch((cause: unknown) => {
      throw new Error(`probing ${variable} for a pooler in transaction mode`, { cause });
    });
  const [transactionPooled, directPooled] = await Promise.all([probe('DATABASE_URL', url), directUrl === undefined ? false : probe('DATABASE_DIRECT_URL', directUrl)]);
  if (directPooled) {
    throw new PoolerModeError(`DATABASE_DIRECT_URL ${TRANSACTION_MODE}; it must be a direct or session-mode URL: the worker's LISTEN and the migrations' advisory lock need a session`);
  }
  if (transactionPooled && directUrl === undefined) {
    throw new PoolerModeError(
      `DATABASE_URL ${TRANSACTION_MODE}; set DATABASE_DIRECT_URL to a direct or session-mode URL for the worker and migrations, or use session mode (docs/deploy.md, "Behind a connection pooler")`,
    );
  }
  return { url, sessionUrl: directUrl ?? url, transactionPooled };
}

/** Whether a client's queries on `url` may run on different server connections (see the top). */
export async function isTransactionPooled(url: string): Promise<boolean> {
  const options = { connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS, query_timeout: PROBE_TIMEOUT_MS, application_name: 'stripe-inbox-pooler-probe' };
  const a = new pg.Client(options);
  const b = new pg.Client(options);
  // A connection lost mid-probe is reported by the query that fails, not as an unhandled 'error'.
  for (const client of [a, b]) client.on('error', () => {});
  try {
    await Promise.all([a.connect(), b.connect()]);
    for (let round = 0; round < PROBE_ROUNDS; round++) {
      const before = await backendPid(a);
      await b.query('begin');
      const pinned = await backendPid(b);
      const after = await backendPid(a);
      await b.query('commit');
      if (after !== before || pinned === before) return true;
    }
    return false;
  } finally {
    await Promise.all([a.end().catch(() => {}), b.end().catch(() => {})]);
  }
}

async function backendPid(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  return rows[0]!.pid;
}
