// Kysely's view of the entitlements module's tables (sql/entitlements/). Its code reaches them with
// `withEntitlementTables(db)`; which account a customer belongs to is the ledger's.
import type { Kysely, Transaction } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';

export interface CustomerEntitlementsTable {
  customer_id: string;
  lookup_key: string;
  feature_id: string;
  /** Known from a full read only (the Feature expanded); a summary event names the Feature's id alone. */
  name: string | null;
}

export interface EntitlementSummariesTable {
  customer_id: string;
  /** Whole seconds: the event's `created`, or when a full read began. */
  as_of: Date;
  /** The event applied; null for a full read. */
  event_id: string | null;
  applied_at: Defaulted<Date>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type EntitlementTables = {
  /** Written by mirror.ts only. */
  customer_entitlements: CustomerEntitlementsTable;
  /** Written by mirror.ts only. */
  entitlement_summaries: EntitlementSummariesTable;
};

export type EntitlementsDatabase = Database & EntitlementTables;

/** The same connection or transaction, typed with this module's tables too. */
export function withEntitlementTables(db: Transaction<Database>): Transaction<EntitlementsDatabase>;
export function withEntitlementTables(db: Kysely<Database>): Kysely<EntitlementsDatabase>;
export function withEntitlementTables(db: Kysely<Database>): Kysely<EntitlementsDatabase> {
  return db.withTables<EntitlementTables>();
}
