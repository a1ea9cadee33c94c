// reconcile_cursors (sql/0029): how far a pass of the scheduled reconcile over its window has
// read each of Stripe's lists, while the pass takes more than one run. Its one writer and reader.
// Two runs may overlap (a tick, and one a changed database identity queued after clearing the
// cursors): a run leaves its cursors only if none moved since it read them. Else a run of an
// older pass would set the newer pass back, or mark a list of it read that it never read: the
// events between would wait for the pass after. What two runs both read is claimed once anyway
// (the claim is keyed by the event id).
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

/**
 * Replaces the cursors the run started from, `from`, with `to` (none when the pass is over); false,
 * and nothing written, when another run moved them meanwhile (its cursors are the newer).
 */
export async function saveCursors(db: Kysely<Database>, from: ReconcileCursors, to: ReconcileCursors): Promise<boolean> {
  const rows = [...to].map(([list, resumeFrom]) => ({ list, resume_from: resumeFrom }));
  return db.transaction().execute(async (tx) => {
    // One saver at a time, and none between a forget and its commit (a DELETE waits on this lock,
    // this lock on it): what is compared is what is replaced.
    await sql`lock table reconcile_cursors in share row exclusive mode`.execute(tx);
    if (!sameCursors(await readCursors(tx), from)) return false;
    await forgetCursors(tx);
    if (rows.length > 0) {
      await sql`
        insert into reconcile_cursors (list, resume_from)
        select list, resume_from from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(list text, resume_from text)`.execute(tx);
    }
    return true;
  });
}

function sameCursors(a: ReconcileCursors, b: ReconcileCursors): boolean {
  return a.size === b.size && [...a].every(([list, resumeFrom]) => b.has(list) && b.get(list) === resumeFrom);
}

/** Every list's next pass starts from the newest. */
export async function forgetCursors(db: Kysely<Database>): Promise<void> {
  await sql`delete from reconcile_cursors`.execute(db);
}
