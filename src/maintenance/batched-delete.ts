// The one shape of every prune's delete: lock a batch of rows, delete exactly those, and go on
// until a batch comes back short. Each batch is one statement, its own short transaction, so no
// long lock is held on the table.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../db/schema.js';

export interface BatchedDelete {
  /** One of the core's tables, or a module's (its retention). */
  table: string;
  /** The table's primary key: what `chosen` carries and the delete joins on. */
  key: string;
  /** Which rows may go; columns named unqualified or as `<table>.<column>`. */
  where: RawBuilder<boolean>;
  /**
   * Rows of other tables that go with the chosen ones, in the same statement: further CTEs after
   * `chosen` (for tables without a foreign key to cascade).
   */
  alongside?: RawBuilder<unknown>;
}

/** Deletes in batches of `batchSize` rows until one comes back short. */
export async function deleteInBatches(db: Kysely<Database>, batchSize: number, what: BatchedDelete): Promise<{ deleted: number; batches: number }> {
  let deleted = 0;
  for (let batches = 1; ; batches++) {
    const batch = await deleteBatch(db, batchSize, what);
    deleted += batch;
    if (batch < batchSize) return { deleted, batches };
  }
}

async function deleteBatch(db: Kysely<Database>, limit: number, { table, key, where, alongside }: BatchedDelete): Promise<number> {
  // The candidates are locked first in a MATERIALIZED CTE and exactly those are deleted: an
  // `IN (subquery ... FOR UPDATE SKIP LOCKED LIMIT n)` may be re-evaluated by the planner and
  // lock and delete more rows than its limit (PostgreSQL bug #15715). SKIP LOCKED: a row someone
  // holds (a replay, a late job, a request's lease) is kept; the next run gets it.
  const { rows } = await sql<{ deleted: number }>`
    with chosen as materialized (
      select ${sql.ref(key)} from ${sql.table(table)} where ${where} limit ${limit} for update skip locked
    )${alongside === undefined ? sql`` : sql`, ${alongside}`},
    deleted as (
      delete from ${sql.table(table)} t using chosen where t.${sql.ref(key)} = chosen.${sql.ref(key)}
      returning 1
    )
    select count(*)::int as deleted from deleted`.execute(db);
  return rows[0]?.deleted ?? 0;
}
