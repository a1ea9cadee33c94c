// WAL a server made Postgres write over a window, from pg_stat_wal (PostgreSQL 14 and later):
// records, bytes and full-page images; and the transactions in its database, from
// pg_stat_database. Unlike CPU time neither moves with the host: they count the rows, index
// entries, row locks and commits each event costs, so two runs on different days compare directly. pg_stat_wal is server-wide, so a window must hold one server's work alone, as
// the ingest part runs them. A backend reports its counts when it goes idle, at most once a
// second, and when it exits: a window that ends after the server's processes stopped has them all.
import type pg from 'pg';

export interface WalWritten {
  records: number;
  bytes: number;
  fullPageImages: number;
  /** Transactions committed or rolled back in the pool's database (pg_stat_database), the bench's own queries included. */
  transactions: number;
}

async function walSoFar(pool: pg.Pool): Promise<WalWritten | undefined> {
  try {
    const { rows } = await pool.query<WalWritten>(
      `select wal_records::float8 as records, wal_bytes::float8 as bytes, wal_fpi::float8 as "fullPageImages",
              (select (xact_commit + xact_rollback)::float8 from pg_stat_database where datname = current_database()) as transactions
       from pg_stat_wal`,
    );
    return rows[0];
  } catch {
    // Before PostgreSQL 14: no pg_stat_wal.
    return undefined;
  }
}

/** Starts a window; stop() returns what was written in it, or undefined where the server cannot tell. */
export async function walWindow(pool: pg.Pool): Promise<{ stop(): Promise<WalWritten | undefined> }> {
  const before = await walSoFar(pool);
  return {
    async stop() {
      const after = await walSoFar(pool);
      if (!before || !after) return undefined;
      return {
        records: after.records - before.records,
        bytes: after.bytes - before.bytes,
        fullPageImages: after.fullPageImages - before.fullPageImages,
        transactions: after.transactions - before.transactions,
      };
    },
  };
}
