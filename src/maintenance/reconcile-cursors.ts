// reconcile_cursors (sql/0029): how far a pass of the scheduled reconcile over its window has
// read each of Stripe's lists, while the pass takes more than one run. Its one writer and reader.
// Two runs at once (a tick and one a changed database identity queued) may read the same cursors
// and both write theirs: the last write wins, and what both read is claimed once anyway (the
// claim is keyed by the event id).
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** Which of Stripe's lists a cursor is in. */
export type ReconcileList = 'snapshot' | 'thin';

/**
 * Per list: where its next page starts, or null once the pass read it to the start of the window.
 * A list not in it is read from the newest; none at all, and a run starts a new pass.
 */
export type ReconcileCursors = ReadonlyMap<ReconcileList, string | null>;

export async function readCursors(db: Kysely<Database>): Promise<ReconcileCursors> {
  const { rows } = await sql<{ list: ReconcileList; resume_from: string | null }>`select list, resume_from from reconcile_cursors`.execute(db);
  return new Map(rows.map((row) => [row.list, row.resume_from]));
}

/** Replaces the cursors with `cursors`: none when the pass is over. */
export async function saveCursors(db: Kysely<Database>, cursors: ReconcileCursors): Promise<void> {
  const rows = [...cursors].map(([list, resumeFrom]) => ({ list, resume_from: resumeFrom }));
  await db.transaction().execute(async (tx) => {
    await forgetCursors(tx);
    if (rows.length === 0) return;
    await sql`
      insert into reconcile_cursors (list, resume_from)
      select list, resume_from from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(list text, resume_from text)`.execute(tx);
  });
}

/** Every list's next pass starts from the newest. */
export async function forgetCursors(db: Kysely<Database>): Promise<void> {
  await sql`delete from reconcile_cursors`.execute(db);
}
