// What every outcome notification tells of an account (docs/notifications.md): its id, its balance
// right after the outcome, and its `sequence`, a count that grows by one with each notification of
// the account, so an app that receives them out of order keeps the highest it has seen. The
// ledger numbers them on the balance's own row (account_credits.notified): the outcomes that move
// a balance hold that row's lock already, so notifications of one account are numbered in the
// order their balances changed, and two transactions never take the same number.
import { sql, type Transaction } from 'kysely';
import type { Database, Notifications } from '../../business-module.js';
import type { Quota } from './account-credits.js';

/** An outcome of a module that sells credits, to tell the account's app of. */
export interface AccountNotification {
  readonly type: string;
  /** The outcome's business key: one notification per key. */
  readonly key: string;
  readonly accountId: string;
  /** What the outcome did to the balance: credits granted (+) or taken back (−); 0 for a state change. */
  readonly creditsDelta: number;
  readonly eventId: string | null;
  /** The type's own fields; account_id, balance and sequence are added. */
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * Notifies of outcomes already written to the balance in `tx` (call it after them, in the same
 * transaction). Several of one account in one call are numbered in the order given, and each
 * carries the balance as it was right after its own outcome.
 */
export async function notifyAccounts(tx: Transaction<Database>, notifications: Notifications, outcomes: readonly AccountNotification[]): Promise<void> {
  if (!notifications.enabled || outcomes.length === 0) return;
  const counts = new Map<string, number>();
  for (const { accountId } of outcomes) counts.set(accountId, (counts.get(accountId) ?? 0) + 1);
  const accounts = [...counts.keys()].sort();
  // In account order, as every writer of account_credits locks its rows.
  const { rows } = await sql<{ account_id: string; granted: number; used: number; notified: number }>`
    insert into account_credits (account_id, notified)
    select account_id, n from unnest(${accounts}::text[], ${accounts.map((a) => counts.get(a)!)}::int[]) as c(account_id, n)
    order by account_id
    on conflict (account_id) do update set notified = account_credits.notified + excluded.notified
    returning account_id, granted, used, notified`.execute(tx);
  const after = new Map(rows.map((row) => [row.account_id, row]));
  // Walk back from the balance after the last outcome of each account to the one after each.
  const state = new Map(rows.map((row) => [row.account_id, { granted: row.granted, sequence: row.notified }]));
  const told = new Array<{ sequence: number; balance: Omit<Quota, 'account_id'> }>(outcomes.length);
  for (let i = outcomes.length - 1; i >= 0; i--) {
    const outcome = outcomes[i]!;
    const account = state.get(outcome.accountId)!;
    const { used } = after.get(outcome.accountId)!;
    told[i] = { sequence: account.sequence, balance: { granted: account.granted, used, remaining: account.granted - used } };
    account.granted -= outcome.creditsDelta;
    account.sequence -= 1;
  }
  await notifications.add(
    tx,
    outcomes.map((outcome, i) => ({
      type: outcome.type,
      key: outcome.key,
      accountId: outcome.accountId,
      sequence: told[i]!.sequence,
      eventId: outcome.eventId,
      data: { account_id: outcome.accountId, ...outcome.data, balance: told[i]!.balance, sequence: told[i]!.sequence },
    })),
  );
}
