// Kysely's statements run as named prepared statements, one per distinct SQL text per connection.
// Postgres then parses and plans each statement once per connection instead of on every call, which
// on the fulfilment path is a large share of the database's CPU per event (docs/speed.md).
// graphile-worker prepares its own statements the same way. This
// wrapper is also where a statement that a column's type change made Postgres refuse is prepared
// again (below).
//
// Which statements are not prepared, and why:
// - `select *`, `returning *`, `t.*`: a prepared statement's result columns are fixed when it is
//   prepared, and Postgres refuses to run it ("cached plan must not change result type") once a
//   migration adds a column to the table, which is the usual expand step of a rolling deploy
//   (docs/migrations.md). Statements that name their columns keep working. The test is on the
//   text, so a star over a function's column list or a CTE is not prepared either, although no
//   migration could change it: statements that run per event name their columns everywhere.
// - Statements without parameters (begin, commit, savepoint, DDL): they go as one simple-protocol
//   message, which is already the cheapest, and may hold several statements.
// - Past MAX_PER_CONNECTION distinct texts on one connection: texts that vary with their input
//   (an `in (...)` list) would otherwise grow the connection's memory without bound.
import { createHash } from 'node:crypto';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

const MAX_PER_CONNECTION = 200;
const STAR_COLUMNS = /\b(?:select|returning)\s+\*|\.\*/i;

export function preparingPool(pool: pg.Pool): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      // One wrapper per connection: Kysely keys its own connection state by this object.
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = new PreparingClient(client);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
    // Part of Kysely's pool interface, for cancelling a query whose abort signal fires; this
    // service passes no abort signals, so Kysely never reads them.
    options: pool.options,
  };
}

class PreparingClient implements PostgresPoolClient {
  readonly #names = new Map<string, string>();
  #renamed = 0;

  constructor(private readonly client: pg.PoolClient) {}

  // Kysely calls query(text, parameters), or query(cursor) for streams, which pass through.
  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(textOrCursor: string | PostgresCursor<R>, parameters: ReadonlyArray<unknown> = []): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof textOrCursor !== 'string') return this.client.query(textOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
    const values = [...parameters];
    const name = values.length > 0 ? this.#nameFor(textOrCursor) : undefined;
    // pg types `command` as any string; Kysely lists the ones it reads.
    const query = this.client.query(name ? { name, text: textOrCursor, values } : { text: textOrCursor, values }) as unknown as Promise<PostgresQueryResult<R>>;
    if (!name) return query;
    return query.catch((error: unknown) => {
      // A migration changed the type of a column this statement returns, which Postgres refuses
      // for a statement prepared before it on every later run. The next run prepares it again,
      // under a new name (pg remembers which names it has prepared on this connection), so the
      // connection recovers after one failed query instead of failing it until it closes.
      if (isResultTypeChanged(error) && this.#names.get(textOrCursor) === name) this.#names.set(textOrCursor, `${name}_${++this.#renamed}`);
      throw error;
    });
  }

  release(destroy?: boolean): void {
    this.client.release(destroy);
  }

  #nameFor(text: string): string | undefined {
    const known = this.#names.get(text);
    if (known !== undefined || this.#names.size >= MAX_PER_CONNECTION || STAR_COLUMNS.test(text)) return known;
    const name = `k_${createHash('sha1').update(text).digest('base64url')}`;
    this.#names.set(text, name);
    return name;
  }
}

function isResultTypeChanged(error: unknown): boolean {
  // feature_not_supported, which covers more than this: the message tells this case apart.
  return (error as { code?: unknown }).code === '0A000' && (error as Error).message === 'cached plan must not change result type';
}
