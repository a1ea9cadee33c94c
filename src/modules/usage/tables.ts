// Kysely's view of the usage module's tables (sql/usage/0041): usage_records, which only
// usage-records.ts writes, and usage_reports, its outbox, which usage-records.ts inserts and the
// pump (report-pump.ts) and the operator's replay (replay.ts) update.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';

export interface UsageRecordsTable {
  usage_id: string;
  account_id: string;
  subscription_id: string;
  event_name: string;
  quantity: number;
  used_at: Defaulted<Date>;
}

export type UsageReportStatus = 'pending' | 'sent' | 'failed';

export interface UsageReportsTable {
  usage_id: string;
  stripe_customer_id: string;
  status: Defaulted<UsageReportStatus>;
  attempts: Defaulted<number>;
  next_attempt_at: Defaulted<Date>;
  first_sent_at: Date | null;
  sent_at: Date | null;
  last_error: string | null;
  created_at: Defaulted<Date>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type UsageTables = {
  usage_records: UsageRecordsTable;
  usage_reports: UsageReportsTable;
};

export type UsageDatabase = Database & UsageTables;
export type UsageReportRow = Selectable<UsageReportsTable>;

/** The same connection or transaction, typed with this module's tables too. */
export function withUsageTables(db: Transaction<Database>): Transaction<UsageDatabase>;
export function withUsageTables(db: Kysely<Database>): Kysely<UsageDatabase>;
export function withUsageTables(db: Kysely<Database>): Kysely<UsageDatabase> {
  return db.withTables<UsageTables>();
}
