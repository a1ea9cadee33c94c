// What an account's credits were used for. Each use (POST /api/accounts/:id/runs) is a run: a row
// of account_runs (sql/ledger/0027) inserted by the statement that moves the balance, so there is
// never a run without its credits used, nor credits used without their run. A run is reversed at
// most once, which gives its credits back. Runs are business records: nothing prunes them.
//
// A run is one statement (data-modifying CTEs), so it is whole on a plain connection as well as in
// the caller's transaction (an Idempotency-Key's, src/http/idempotent-request.ts). A reversal,
// which also pays what refunds and disputes are still owed, needs a transaction. Locks are taken
// in one order: a run locks its balance's row only; a reversal its run's row, the purchases whose
// refunds and disputes are owed credits, then the balance's.
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../business-module.js';
import { noteDisputesPaid } from './disputes.js';
import type { PaidClaim, ShortfallSettler } from './revocations.js';
import { withLedgerTables } from './tables.js';

const newRunId = () => `run_${randomUUID().replaceAll('-', '')}`;

/** A run as GET /api/accounts/:id/runs lists it. */
export interface Run {
  run_id: string;
  quantity: number;
  created_at: Date;
  reversed_at: Date | null;
}

/** What a run answers: its id, the credits it used and the balance it left. */
export interface ConsumedRun {
  runId: string;
  quantity: number;
  remaining: number;
}

/**
 * Another way an account's run is recorded than by drawing credits: a usage-billed plan's
 * (src/modules/usage/, wired in src/modules/index.ts, so that the ledger never imports it).
 * Given the run's request, it records the run in `db` (the Idempotency-Key's transaction, or a
 * plain connection: then in one statement) and says what the answer tells, or answers undefined
 * when the account's runs are not its kind, and the next recorder, then the credits, are asked.
 */
export type RunRecorder = (db: Kysely<Database>, accountId: string, quantity: number) => Promise<RecordedRun | undefined>;

/** A run a recorder made: its kind ('usage') and the rest of the 201 answer. JSON: kept under the key. */
export interface RecordedRun {
  kind: string;
  answer: Record<string, unknown>;
}

/**
 * Uses `quantity` credits of the account and records the run; undefined, with nothing used, when
 * fewer are left. The conditional UPDATE's row lock serialises the account's runs and its
 * predicate is re-checked once the lock is had, so the balance never goes below zero (also a CHECK
 * constraint); the run is inserted only from the balance row the UPDATE moved.
 */
export async function consumeCredits(db: Kysely<Database>, accountId: string, quantity: number): Promise<ConsumedRun | undefined> {
  const { rows } = await sql<ConsumedRun>`
    with consumed as (
      update account_credits set used = used + ${quantity}
      where account_id = ${accountId} and granted - used >= ${quantity}
      returning account_id, granted - used as remaining
    ), recorded as (
      insert into account_runs (run_id, account_id, quantity)
      select ${newRunId()}::text, account_id, ${quantity}::int from consumed
      returning run_id, quantity
    )
    select recorded.run_id as "runId", recorded.quantity, consumed.remaining from recorded, consumed`.execute(db);
  return rows[0];
}

export type Reversal =
  /** `revoked`: of the credits given back, those a refund or dispute of a purchase claimed while they were in use, taken back at once. */
  | { outcome: 'reversed'; quantity: number; revoked: number; remaining: number; reversedAt: Date }
  /** Reversed before, by another request: its credits were given back then, and are not again. */
  | { outcome: 'already_reversed'; reversedAt: Date }
  /** No run of this id belongs to the account. */
  | { outcome: 'not_found' };

/**
 * Gives a run's credits back, once, less what the account's purchases' refunds and disputes are
 * still owed (each settler's, revocations.ts). Locks in the order refunds and disputes do: the
 * run's row, which a concurrent second reversal waits on and then finds reversed, the purchases
 * the settlers lock, then the balance.
 */
export async function reverseRun(tx: Transaction<Database>, accountId: string, runId: string, settlers: readonly ShortfallSettler[]): Promise<Reversal> {
  const run = await withLedgerTables(tx)
    .selectFrom('account_runs')
    .select(['quantity', 'reversed_at'])
    .where('run_id', '=', runId)
    .where('account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirst();
  if (!run) return { outcome: 'not_found' };
  if (run.reversed_at !== null) return { outcome: 'already_reversed', reversedAt: run.reversed_at };
  const paid: PaidClaim[] = [];
  let revoked = 0;
  for (const settle of settlers) {
    if (revoked === run.quantity) break;
    for (const claim of await settle(tx, accountId, run.quantity - revoked)) {
      paid.push(claim);
      revoked += claim.paid;
    }
  }
  await noteDisputesPaid(tx, paid);
  // used <= granted holds: the balance gains quantity - revoked unused credits, never fewer than none.
  const { rows } = await sql<{ remaining: number; reversed_at: Date }>`
    with reversed as (
      update account_runs set reversed_at = now() where run_id = ${runId}
      returning account_id, reversed_at
    )
    update account_credits set used = account_credits.used - ${run.quantity}, granted = account_credits.granted - ${revoked}
    from reversed
    where account_credits.account_id = reversed.account_id
    returning account_credits.granted - account_credits.used as remaining, reversed.reversed_at`.execute(tx);
  const reversed = rows[0]!;
  return { outcome: 'reversed', quantity: run.quantity, revoked, remaining: reversed.remaining, reversedAt: reversed.reversed_at };
}

/**
 * A page of the account's runs, newest first, after the run `after` (the last of the previous
 * page); undefined when `after` names no run of the account. One more row than asked tells
 * whether there is a next page.
 */
export async function listRuns(
  db: Kysely<Database>,
  accountId: string,
  page: { limit: number; after: string | undefined },
): Promise<{ runs: Run[]; nextCursor: string | null } | undefined> {
  const ledger = withLedgerTables(db);
  let query = ledger.selectFrom('account_runs').select(['run_id', 'quantity', 'created_at', 'reversed_at']).where('account_id', '=', accountId);
  if (page.after !== undefined) {
    const cursor = await ledger
      .selectFrom('account_runs')
      .select('run_id')
      .where('run_id', '=', page.after)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!cursor) return undefined;
    // Compared in SQL: created_at has microseconds, which a JavaScript Date would drop.
    query = query.where(sql<boolean>`(created_at, run_id) < (select created_at, run_id from account_runs where run_id = ${page.after})`);
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('run_id', 'desc')
    .limit(page.limit + 1)
    .execute();
  const runs = rows.slice(0, page.limit);
  return { runs, nextCursor: rows.length > page.limit ? runs[runs.length - 1]!.run_id : null };
}
