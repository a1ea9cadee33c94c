// Kysely's view of the ledger's tables: account_credits (created by sql/0001, before modules had
// their own migrations; its changes go in sql/ledger/), which only account-credits.ts (grants and
// revocations), runs.ts (credits used and given back) and account-notifications.ts (the count of
// notifications) write; disputes (sql/ledger/0022), which only disputes.ts writes; and
// account_runs (sql/ledger/0027), which only runs.ts writes; stripe_customers (sql/ledger/0034), which
// only customer-links.ts writes.
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

export interface AccountRunsTable {
  run_id: string;
  account_id: string;
  quantity: number;
  created_at: Defaulted<Date>;
  reversed_at: Date | null;
}

export interface StripeCustomersTable {
  customer_id: string;
  account_id: string;
  /** The Checkout Session whose fulfilment linked it. */
  linked_by: string;
  linked_at: Defaulted<Date>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type LedgerTables = {
  /** The running balance: grants and revocations by account-credits.ts, runs by runs.ts. */
  account_credits: AccountCreditsTable;
  /** Written by disputes.ts only. */
  disputes: DisputesTable;
  /** Written by runs.ts only, with the balance it moves. */
  account_runs: AccountRunsTable;
  /** Written by customer-links.ts only: a Stripe customer's account, linked once (sql/ledger/0034). */
  stripe_customers: StripeCustomersTable;
};

export type LedgerDatabase = Database & LedgerTables;

/** The same connection or transaction, typed with the ledger's table too. */
export function withLedgerTables(db: Transaction<Database>): Transaction<LedgerDatabase>;
export function withLedgerTables(db: Kysely<Database>): Kysely<LedgerDatabase>;
export function withLedgerTables(db: Kysely<Database>): Kysely<LedgerDatabase> {
  return db.withTables<LedgerTables>();
}
