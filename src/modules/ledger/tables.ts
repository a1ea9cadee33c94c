// Kysely's view of the ledger's one table, account_credits (created by sql/0001, before modules
// had their own migrations; its changes go in sql/ledger/). Only account-credits.ts (the balance)
// and account-notifications.ts (the count of notifications) write it.
import type { Kysely, Transaction } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';

export interface AccountCreditsTable {
  account_id: string;
  granted: Defaulted<number>;
  used: Defaulted<number>;
  /** Notifications of the account so far: the last one's sequence (account-notifications.ts). */
  notified: Defaulted<number>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type LedgerTables = {
  /** Written by account-credits.ts only: the running balance. */
  account_credits: AccountCreditsTable;
};

export type LedgerDatabase = Database & LedgerTables;

/** The same connection or transaction, typed with the ledger's table too. */
export function withLedgerTables(db: Transaction<Database>): Transaction<LedgerDatabase>;
export function withLedgerTables(db: Kysely<Database>): Kysely<LedgerDatabase>;
export function withLedgerTables(db: Kysely<Database>): Kysely<LedgerDatabase> {
  return db.withTables<LedgerTables>();
}
