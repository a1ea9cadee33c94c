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
// Nothing in the protocol says "this is a pooler", so it is found out by what one does. Two clients,
// A and B, take turns: A reads its server's pid; B opens a transaction, which pins a server
// connection, by default (PgBouncer's LIFO reuse) the one A just released; A reads its pid again
// while B holds it; B commits. A session, direct or through a pooler in session mode, keeps its
// server for its life: each client sees one pid throughout, and never the other's. In transaction
// mode one of them sees a second pid, or both see the same one. Every pid of every round counts,
// not only the round's own: other clients of the pool (another probe starting beside this one, a
// running service) can hand a server back in between, so that a single round sees nothing, but
// rarely in the same way five rounds running. A miss is a service started against a transaction
// pooler as if it were a session; a session is never taken for transaction mode.
import pg from 'pg';

const PROBE_ROUNDS = 5;
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
  const [transactionPooled, directPooled] = await Promise.all([
    probe('DATABASE_URL', url),
    directUrl === undefined ? false : probe('DATABASE_DIRECT_URL', directUrl),
  ]);
  if (directPooled) {
    throw new PoolerModeError(
      `DATABASE_DIRECT_URL ${TRANSACTION_MODE}; it must be a direct or session-mode URL: the worker's LISTEN and the migrations' advisory lock need a session`,
    );
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
  const options = {
    connectionString: url,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
    application_name: 'stripe-inbox-pooler-probe',
  };
  const a = new pg.Client(options);
  const b = new pg.Client(options);
  // A connection lost mid-probe is reported by the query that fails, not as an unhandled 'error'.
  for (const client of [a, b]) client.on('error', () => {});
  try {
    await Promise.all([a.connect(), b.connect()]);
    const seenByA = new Set<number>();
    const seenByB = new Set<number>();
    for (let round = 0; round < PROBE_ROUNDS; round++) {
      seenByA.add(await backendPid(a));
      await b.query('begin');
      seenByB.add(await backendPid(b));
      seenByA.add(await backendPid(a));
      await b.query('commit');
      if (seenByA.size > 1 || seenByB.size > 1 || [...seenByA].some((pid) => seenByB.has(pid))) return true;
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
