// Kysely's view of our tables. Column types are what `pg` really returns: timestamptz as Date,
// json and jsonb parsed, integer as number. We have no int8 columns; counts are cast to int in SQL, so
// pg's default (int8 as string) is left alone for graphile-worker's bigint job ids.
import type { ColumnType, Selectable } from 'kysely';

export const EVENT_STATUSES = ['processing', 'processed', 'ignored', 'duplicate', 'failed'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export type Defaulted<T> = ColumnType<T, T | undefined, T>;

export interface StripeEventsTable {
  event_id: string;
  type: string;
  object_id: string | null;
  livemode: boolean;
  stripe_created_at: Date;
  // The raw, verified body as Stripe signed it (a json column keeps the text); read back parsed.
  payload: ColumnType<unknown, string, never>;
  status: Defaulted<EventStatus>;
  attempts: Defaulted<number>;
  last_error: string | null;
  duplicate_of: string | null;
  received_at: Defaulted<Date>;
  enqueued_at: Defaulted<Date>;
  finished_at: Date | null;
  /** The key of the graphile-worker job of the last enqueue (src/queue/job-queue.ts); null before 0007. */
  job_key: string | null;
  /** The webhook request's span as a W3C traceparent (sql/0033); null while tracing is off. */
  trace_context: Defaulted<string | null>;
}

/**
 * An event parked while it waits for something still to come (sql/0026, src/events/event-waits.ts).
 * Apart from StripeEventsTable because fulfilment never reads them: the statements that park and
 * wake an event do, so the row a handler gets stays what it was.
 */
export interface EventWaitColumns {
  /** The keys it waits for; meaningful only while the row is 'processing'. */
  waits_for: string[] | null;
  /** When the wait gives up: set by its first wait, kept across wakes. */
  wait_until: Date | null;
}

/** Written by src/http/idempotent-request.ts only; pruned by src/maintenance/prune-idempotency-keys.ts. */
export interface ApiIdempotencyKeysTable {
  /** `<operation>:<the caller's key>`. */
  idempotency_key: string;
  /** What the key is for, named by the module that uses it: 'checkout', 'refund'. */
  operation: string;
  request_hash: string;
  /**
   * What the key names, created once when it was registered (a new order, the next refund of an
   * order): the module's JSON. (The columns the release before sql/0010 used, order_id,
   * refund_seq and refund_amount, are kept in step with it by a trigger and not listed here:
   * docs/migrations.md, compatibility C4.)
   */
  subject: ColumnType<unknown, string, never>;
  response_status: number | null;
  response_body: ColumnType<unknown, string | null, string | null>;
  created_at: Defaulted<Date>;
  /** While in the future, a request holding this key is running. */
  leased_until: Date | null;
  /**
   * A module numbers something by these keys (countKeys): kept for good. The others are pruned
   * with the events (src/maintenance/prune.ts).
   */
  counted: ColumnType<boolean, boolean, never>;
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

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Written by src/notifications/outbox.ts only; pruned with the events. */
export interface NotificationsTable {
  notification_id: string;
  business_key: string;
  type: string;
  account_id: string | null;
  sequence: number | null;
  event_id: string | null;
  body: string;
  created_at: Defaulted<Date>;
  /** The fulfilment span that wrote it, as a W3C traceparent (sql/0033): its deliveries' parent. Null while tracing is off. */
  trace_context: Defaulted<string | null>;
}

/** One per notification and endpoint; moved by src/notifications/ only. */
export interface NotificationDeliveriesTable {
  delivery_id: string;
  notification_id: string;
  endpoint: string;
  status: Defaulted<DeliveryStatus>;
  attempts: Defaulted<number>;
  leased_until: Date | null;
  next_attempt_at: Defaulted<Date>;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
}

export interface NotificationAttemptsTable {
  delivery_id: string;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

/** One row per happening told by a snapshot event (sql/0024): which event claimed it first. */
export interface SnapshotClaimsTable {
  snapshot_event_id: string;
  event_id: string;
  claimed_at: Defaulted<Date>;
}

/** sql/0031: the types some running release acts on (src/fulfilment/finish-at-intake.ts). */
export interface EventTypesActedOnTable {
  event_type: string;
  registered_at: Defaulted<Date>;
}

export interface Database {
  stripe_events: StripeEventsTable & EventWaitColumns;
  snapshot_claims: SnapshotClaimsTable;
  event_types_acted_on: EventTypesActedOnTable;
  api_idempotency_keys: ApiIdempotencyKeysTable;
  maintenance_runs: MaintenanceRunsTable;
  admin_sessions: AdminSessionsTable;
  notifications: NotificationsTable;
  notification_deliveries: NotificationDeliveriesTable;
  notification_attempts: NotificationAttemptsTable;
}

/** An event row as read; its trace context only where tracing is on (src/events/event-store.ts). */
export type StripeEventRow = Omit<Selectable<StripeEventsTable>, 'trace_context'> & { trace_context?: string | null };
