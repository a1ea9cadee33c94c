// Kysely's view of the credits module's tables (the first four created by the core's sql/0001 and
// sql/0003, before modules had their own migrations; changes and new tables go in sql/credits/).
// Its code reaches them through `withCreditTables(db)`; the account balances they grant into are
// the ledger's.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';
import type { CatalogColumns } from '../catalog/index.js';

export type OrderStatus = 'pending' | 'paid' | 'refunded';

/** Its Stripe Price and Product columns are sql/credits/0020's. */
export interface PackagesTable extends CatalogColumns {
  package_id: string;
}

export interface OrdersTable {
  order_id: string;
  package_id: string;
  account_id: string;
  email: string | null;
  amount: number;
  currency: string;
  credits: number;
  status: Defaulted<OrderStatus>;
  checkout_session_id: string | null;
  created_at: Defaulted<Date>;
  paid_at: Date | null;
  payment_intent_id: string | null;
  refunded_amount: Defaulted<number>;
}

export interface CreditGrantsTable {
  order_id: string;
  account_id: string;
  credits: number;
  event_id: string;
  granted_at: Defaulted<Date>;
}

export interface CreditRevocationsTable {
  order_id: string;
  account_id: string;
  target_credits: number;
  revoked_credits: number;
  updated_at: Defaulted<Date>;
}

export type RefundRequestStatus = 'requested' | 'succeeded' | 'failed';

/** A refund asked through the admin API, held back before Stripe is called (sql/credits/0030). */
export interface RefundRequestsTable {
  order_id: string;
  seq: number;
  amount: number;
  status: Defaulted<RefundRequestStatus>;
  stripe_refund_id: string | null;
  created_at: Defaulted<Date>;
  updated_at: Defaulted<Date>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type CreditTables = {
  packages: PackagesTable;
  orders: OrdersTable;
  /** Written by order-payment.ts only. */
  credit_grants: CreditGrantsTable;
  /** Written by credit-revocations.ts only. */
  credit_revocations: CreditRevocationsTable;
  /** Written by refunds.ts only. */
  refund_requests: RefundRequestsTable;
};

export type CreditsDatabase = Database & CreditTables;
export type OrderRow = Selectable<OrdersTable>;
export type PackageRow = Selectable<PackagesTable>;

/** The same connection or transaction, typed with this module's tables too. */
export function withCreditTables(db: Transaction<Database>): Transaction<CreditsDatabase>;
export function withCreditTables(db: Kysely<Database>): Kysely<CreditsDatabase>;
export function withCreditTables(db: Kysely<Database>): Kysely<CreditsDatabase> {
  return db.withTables<CreditTables>();
}
