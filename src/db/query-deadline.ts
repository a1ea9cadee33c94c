// A deadline on every query sent on a pool's connections, for the one failure nothing else
// bounds: a half-open connection. When the database's host vanishes without a reset (a network
// partition, a frozen VM, a failover to another address), a query already sent gets neither an
// answer nor an error; TCP retransmits for about 15 minutes before it gives up, and keepalives do
// not run while data waits for an acknowledgement. Until then the query's promise never settles,
// and its pool slot, and whatever waits on it, stay taken: the webhook's one claim transaction in
// flight, or graphile-worker's job fetch, after which the worker fulfils nothing and no sweep runs
// (both are jobs of that worker). statement_timeout cannot help: it runs on the server. Past the
// deadline the connection is closed: the query fails as a lost connection, the pool opens a
// fresh one, and the work waiting on it moves on (graphile-worker retries a fetch at its next
// poll and a job's completion with its own backoff).
//
// The deadline is put on the connection itself (the pool's 'connect' event), not on one client
// library's calls, so that graphile-worker's queries, its cron's and its LISTEN get it as
// Kysely's do. A caller that knowingly waits longer (migrations: a lock held by another start,
// a table rewrite) lifts it for its own connection with `withoutDeadline`.
import type pg from 'pg';

export class QueryDeadlineError extends Error {
  // A lost connection, as the callers classify errors (src/db/pg-errors.ts, and graphile-worker's
  // retryable codes): retry, or 503.
  readonly code = 'ETIMEDOUT';

  constructor(ms: number) {
    super(`no answer from Postgres within ${ms} ms: the connection was closed`);
    this.name = 'QueryDeadlineError';
  }
}

const unbounded = new WeakSet<pg.ClientBase>();

/**
 * From now on every query on a connection of `pool` that has no answer within `ms` closes that
 * connection, and the pool's idle connections with it: what froze one connection (a partition, a
 * failover) froze the others opened before it, and each would otherwise be found out only by the
 * next query sent on it, one deadline at a time. Idle connections cost only a reconnect to lose.
 */
export function deadlineEveryQuery(pool: pg.Pool, ms: number): void {
  const idle = new Set<pg.PoolClient>();
  pool.on('acquire', (client) => idle.delete(client));
  pool.on('release', (_error, client) => idle.add(client));
  pool.on('remove', (client) => idle.delete(client));
  const expired = (client: pg.ClientBase) => {
    close(client, new QueryDeadlineError(ms));
    for (const other of idle) close(other, new QueryDeadlineError(ms));
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      const result = query(...args);
      // Callback and Submittable forms (a cursor) return no promise: they pass through.
      if (!(result instanceof Promise) || unbounded.has(client)) return result;
      return settleWithin(result, ms, () => expired(client));
    }) as typeof client.query;
  });
}

/**
 * `query`, after closing `client`'s connection if it has not settled within `ms`. For a bound
 * tighter than the pool's, such as a probe that a healthy server answers in milliseconds.
 */
export function withDeadline<T>(client: pg.ClientBase, query: Promise<T>, ms: number): Promise<T> {
  return settleWithin(query, ms, () => close(client, new QueryDeadlineError(ms)));
}

function settleWithin<T>(query: Promise<T>, ms: number, onExpiry: () => void): Promise<T> {
  const timer = setTimeout(onExpiry, ms);
  return query.finally(() => clearTimeout(timer));
}

function close(client: pg.ClientBase, error: Error): void {
  (client as unknown as { connection: { stream: { destroy(error: Error): void } } }).connection.stream.destroy(error);
}

/** Runs `work` with the pool's deadline lifted on `client`'s connection, then puts it back. */
export async function withoutDeadline<T>(client: pg.ClientBase, work: () => Promise<T>): Promise<T> {
  unbounded.add(client);
  try {
    return await work();
  } finally {
    unbounded.delete(client);
  }
}
