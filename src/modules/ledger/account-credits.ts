// An account's quota, and the writer of its running balance (account_credits): grants add to it,
// revocations take back from it; runs use it and reversals give back (runs.ts, which records each
// run with the balance it moves). Quota = granted - used. What was granted for
// what (an order, a paid invoice) is the granting module's own record (credits' credit_grants,
// billing's invoice_grants), kept in the same transaction as the balance it adds to.
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../business-module.js';
import { withLedgerTables } from './tables.js';

export interface Quota {
  account_id: string;
  granted: number;
  used: number;
  remaining: number;
}

export async function getQuota(db: Kysely<Database>, accountId: string): Promise<Quota> {
  const row = await withLedgerTables(db).selectFrom('account_credits').select(['granted', 'used']).where('account_id', '=', accountId).executeTakeFirst();
  const granted = row?.granted ?? 0;
  const used = row?.used ?? 0;
  return { account_id: accountId, granted, used, remaining: granted - used };
}

/**
 * Adds grants to their accounts' balances, in the transaction that recorded them. Summed per
 * account (an upsert may not touch one row twice in a statement) and in account order, so two
 * batches granting to the same accounts take the row locks in the same order.
 */
export async function addGrants(tx: Transaction<Database>, grants: ReadonlyArray<{ accountId: string; credits: number }>): Promise<void> {
  if (grants.length === 0) return;
  await grantsAdded(
    sql`select account_id, credits from unnest(${grants.map((g) => g.accountId)}::text[], ${grants.map((g) => g.credits)}::int[]) as g(account_id, credits)`,
  ).execute(tx);
}

/**
 * addGrants as a statement for the rows `granted` yields (account_id, credits): a data-modifying
 * CTE, so the statement that records the grants also adds them, with no round trip of its own.
 */
export function grantsAdded(granted: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    insert into account_credits (account_id, granted)
    select account_id, sum(credits) from (${granted}) as g(account_id, credits)
    group by account_id
    order by account_id
    on conflict (account_id) do update set granted = account_credits.granted + excluded.granted`;
}

/**
 * Takes back up to `owed` credits from an account, never more than it has left: credits already
 * used stay used, so quota never drops below zero. The row is locked first, so runs being used
 * at the same time wait and "what is left" stays true until commit. Returns what was taken.
 */
export async function takeBackCredits(transaction: Transaction<Database>, accountId: string, owed: number): Promise<number> {
  const tx = withLedgerTables(transaction);
  const account = await tx.selectFrom('account_credits').select(['granted', 'used']).where('account_id', '=', accountId).forUpdate().executeTakeFirst();
  const taken = Math.min(owed, account ? account.granted - account.used : 0);
  if (taken > 0) {
    await tx
      .updateTable('account_credits')
      .set({ granted: sql`granted - ${taken}` })
      .where('account_id', '=', accountId)
      .execute();
  }
  return taken;
}
