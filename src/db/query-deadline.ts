// A deadline on every query the service sends through Kysely (src/db/prepared-statements.ts),
// for the one failure nothing else bounds: a half-open connection. When the database's host
// vanishes without a reset (a network partition, a frozen VM, a failover to another address),
// a query already sent gets neither an answer nor an error; TCP retransmits for about 15 minutes
// before it gives up, and keepalives do not run while data waits for an acknowledgement. Until
// then the query's promise never settles, and its pool slot, and whatever waits on it (the
// webhook's one claim transaction in flight), stay taken. statement_timeout cannot help: it runs
// on the server. Past the deadline the connection is closed: the query fails as a lost
// connection, the pool opens a fresh one, and the work waiting on it moves on.
import type pg from 'pg';

export class QueryDeadlineError extends Error {
  // A lost connection, as the callers classify errors (src/db/pg-errors.ts): retry, or 503.
  readonly code = 'ETIMEDOUT';

  constructor(ms: number) {
    super(`no answer from Postgres within ${ms} ms: the connection was closed`);
    this.name = 'QueryDeadlineError';
  }
}

/** `query`, after closing `client`'s connection if it has not settled within `ms`. */
export function withDeadline<T>(client: pg.PoolClient, query: Promise<T>, ms: number): Promise<T> {
  const timer = setTimeout(() => (client as unknown as pg.Client).connection.stream.destroy(new QueryDeadlineError(ms)), ms);
  return query.finally(() => clearTimeout(timer));
}
