// Kysely's view of our tables. Column types are what `pg` really returns: timestamptz as Date,
// jsonb parsed, integer as number. We have no int8 columns; counts are cast to int in SQL, so
// pg's default (int8 as string) is left alone for graphile-worker's bigint job ids.
import type { ColumnType, Insertable, Selectable } from 'kysely';

export const EVENT_STATUSES = ['processing', 'processed', 'ignored', 'duplicate', 'failed'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];
export type OrderStatus = 'pending' | 'paid' | 'refunded';

type Defaulted<T> = ColumnType<T, T | undefined, T>;

export interface StripeEventsTable {
  event_id: string;
  type: string;
  object_id: string | null;
  livemode: boolean;
  stripe_created_at: Date;
  // Inserted as the raw, verified body text; read back as parsed JSON.
  payload: ColumnType<unknown, string, never>;
  status: Defaulted<EventStatus>;
  attempts: Defaulted<number>;
  last_error: string | null;
  duplicate_of: string | null;
  received_at: Defaulted<Date>;
  enqueued_at: Defaulted<Date>;
  finished_at: Date | null;
  /** The key of the graphile-worker job of the last enqueue (src/events/enqueue.ts); null before 0007. */
  job_key: string | null;
}

export interface PackagesTable {
  package_id: string;
  name: string;
  amount: number;
  currency: string;
  credits: number;
  active: Defaulted<boolean>;
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

export interface AccountCreditsTable {
  account_id: string;
  granted: Defaulted<number>;
  used: Defaulted<number>;
}

export interface ApiIdempotencyKeysTable {
  idempotency_key: string;
  operation: Defaulted<'checkout' | 'refund'>;
  request_hash: string;
  order_id: string;
  refund_seq: number | null;
  refund_amount: number | null;
  response_status: number | null;
  response_body: ColumnType<unknown, string | null, string | null>;
  created_at: Defaulted<Date>;
  /** While in the future, a request holding this key is running (src/http/idempotent-request.ts). */
  leased_until: Date | null;
}

/** Written by src/http/admin-session.ts only. */
export interface AdminSessionsTable {
  session_digest: string;
  created_at: Defaulted<Date>;
  expires_at: Date;
  revoked_at: Date | null;
}

export interface MaintenanceRunsTable {
  name: string;
  last_run_at: Date;
  last_result: ColumnType<unknown, string, string>;
}

export interface Database {
  stripe_events: StripeEventsTable;
  packages: PackagesTable;
  orders: OrdersTable;
  credit_grants: CreditGrantsTable;
  account_credits: AccountCreditsTable;
  credit_revocations: CreditRevocationsTable;
  api_idempotency_keys: ApiIdempotencyKeysTable;
  maintenance_runs: MaintenanceRunsTable;
  admin_sessions: AdminSessionsTable;
}

export type StripeEventRow = Selectable<StripeEventsTable>;
export type NewStripeEvent = Insertable<StripeEventsTable>;
export type OrderRow = Selectable<OrdersTable>;
export type PackageRow = Selectable<PackagesTable>;
