// Kysely's view of the ledger's tables: account_credits (created by sql/0001, before modules had
// their own migrations; its changes go in sql/ledger/), which only account-credits.ts (the
// balance) and account-notifications.ts (the count of notifications) write, and disputes
// (sql/ledger/0022), which only disputes.ts writes.
import type { Kysely, Transaction } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';

export interface AccountCreditsTable {
  account_id: string;
  granted: Defaulted<number>;
  used: Defaulted<number>;
  /** Notifications of the account so far: the last one's sequence (account-notifications.ts). */
  notified: Defaulted<number>;
}

export interface DisputesTable {
  dispute_id: string;
  charge_id: string;
  payment_intent_id: string;
  purchase: string;
  account_id: string;
  status: string;
  status_at: Date;
  funds_withdrawn: Defaulted<boolean>;
  funds_reinstated: Defaulted<boolean>;
  credits_taken: Defaulted<number>;
  credits_returned: Defaulted<number>;
  created_at: Defaulted<Date>;
  updated_at: Defaulted<Date>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type LedgerTables = {
  /** Written by account-credits.ts only: the running balance. */
  account_credits: AccountCreditsTable;
  /** Written by disputes.ts only. */
  disputes: DisputesTable;
};

export type LedgerDatabase = Database & LedgerTables;

/** The same connection or transaction, typed with the ledger's table too. */
export function withLedgerTables(db: Transaction<Database>): Transaction<LedgerDatabase>;
export function withLedgerTables(db: Kysely<Database>): Kysely<LedgerDatabase>;
export function withLedgerTables(db: Kysely<Database>): Kysely<LedgerDatabase> {
  return db.withTables<LedgerTables>();
}
