// The outbox as ops read and act on it: what is pending or failed per endpoint (status, metrics,
// the dashboard), the notifications by status, by the event that produced them or by account
// (each delivery with its attempts), and the replay of a dead letter. The outbox writes (outbox.ts) and the
// deliveries move rows (delivery-pump.ts, src/maintenance/lease-reclaim.ts); only a replay here moves
// them back.
import { sql, type Kysely } from 'kysely';
import type { Database, DeliveryStatus } from '../db/schema.js';
import { endpointLabel } from './endpoint-label.js';

export interface EndpointSummary {
  /** Scheme, host and path (endpointLabel): never a credential the URL carries. */
  endpoint: string;
  pending: number;
  failed: number;
  /** Age of the oldest notification still pending for the endpoint; null when none is. */
  oldest_pending_age_seconds: number | null;
}

/** Deliveries not yet delivered, per endpoint (by their partial index: cheap however long the history). */
export async function notificationSummary(db: Kysely<Database>): Promise<EndpointSummary[]> {
  const { rows } = await sql<{ endpoint: string; pending: number; failed: number; oldest: number | null }>`
    select d.endpoint,
           count(*) filter (where d.status = 'pending')::int as pending,
           count(*) filter (where d.status = 'failed')::int as failed,
           extract(epoch from now() - min(n.created_at) filter (where d.status = 'pending'))::int as oldest
    from notification_deliveries d join notifications n using (notification_id)
    where d.status <> 'delivered'
    group by d.endpoint
    order by d.endpoint`.execute(db);
  // Two URLs that differ only in a credential are shown as one.
  const byLabel = new Map<string, EndpointSummary>();
  for (const row of rows) {
    const label = endpointLabel(row.endpoint);
    const seen = byLabel.get(label) ?? { endpoint: label, pending: 0, failed: 0, oldest_pending_age_seconds: null };
    seen.pending += row.pending;
    seen.failed += row.failed;
    if (row.oldest !== null) seen.oldest_pending_age_seconds = Math.max(seen.oldest_pending_age_seconds ?? 0, row.oldest);
    byLabel.set(label, seen);
  }
  return [...byLabel.values()];
}

export interface AttemptView {
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

export interface DeliveryView {
  endpoint: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  /** Oldest first; in the lists, only the last few. */
  attempt_log: AttemptView[];
}

export interface NotificationView {
  notification_id: string;
  type: string;
  account_id: string | null;
  sequence: number | null;
  event_id: string | null;
  created_at: string;
  /** The body as sent, parsed. */
  body: unknown;
  deliveries: DeliveryView[];
}

/** Attempts shown per delivery in a list; an event's detail shows them all. */
const LIST_ATTEMPTS = 5;

export interface NotificationQuery {
  /** Those with a delivery in this status. */
  status?: DeliveryStatus;
  eventId?: string;
  /** Those about this account (the accounts view). */
  accountId?: string;
  ids?: readonly string[];
  /** Newest first, at most this many. */
  limit?: number;
}

export async function listNotifications(db: Kysely<Database>, query: NotificationQuery): Promise<NotificationView[]> {
  let select = db
    .selectFrom('notifications as n')
    .select(['n.notification_id', 'n.type', 'n.account_id', 'n.sequence', 'n.event_id', 'n.created_at', 'n.body']);
  if (query.status) {
    const status = query.status;
    select = select.where((eb) =>
      eb.exists(
        eb
          .selectFrom('notification_deliveries as d')
          .select('d.delivery_id')
          .whereRef('d.notification_id', '=', 'n.notification_id')
          .where('d.status', '=', status),
      ),
    );
  }
  if (query.eventId) select = select.where('n.event_id', '=', query.eventId);
  if (query.accountId) select = select.where('n.account_id', '=', query.accountId);
  if (query.ids) select = select.where('n.notification_id', 'in', query.ids.length > 0 ? query.ids : ['']);
  const notifications = await select
    .orderBy('n.created_at', 'desc')
    .orderBy('n.notification_id')
    .limit(query.limit ?? 100)
    .execute();
  if (notifications.length === 0) return [];
  const ids = notifications.map((n) => n.notification_id);
  const deliveries = await db.selectFrom('notification_deliveries').selectAll().where('notification_id', 'in', ids).orderBy('delivery_id').execute();
  const attempts = await db
    .selectFrom('notification_attempts')
    .select(['delivery_id', 'started_at', 'duration_ms', 'status_code', 'error'])
    .where('delivery_id', 'in', deliveries.length > 0 ? deliveries.map((d) => d.delivery_id) : [''])
    .orderBy('started_at')
    .execute();
  const keep = query.eventId ? Infinity : LIST_ATTEMPTS;
  return notifications.map((n) => ({
    notification_id: n.notification_id,
    type: n.type,
    account_id: n.account_id,
    sequence: n.sequence,
    event_id: n.event_id,
    created_at: n.created_at.toISOString(),
    body: JSON.parse(n.body) as unknown,
    deliveries: deliveries
      .filter((d) => d.notification_id === n.notification_id)
      .map((d) => ({
        endpoint: endpointLabel(d.endpoint),
        status: d.status,
        attempts: d.attempts,
        next_attempt_at: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
        last_status_code: d.last_status_code,
        last_error: d.last_error,
        delivered_at: d.delivered_at?.toISOString() ?? null,
        attempt_log: attempts
          .filter((a) => a.delivery_id === d.delivery_id)
          .slice(-keep)
          .map((a) => ({ started_at: a.started_at.toISOString(), duration_ms: a.duration_ms, status_code: a.status_code, error: a.error })),
      })),
  }));
}

export interface ReplayResult {
  /** Notifications with a delivery queued again. */
  replayed: string[];
  /** Asked for, but unknown, or every delivery of it has an attempt in flight. */
  skipped: string[];
}

/**
 * Makes deliveries due again, with a fresh count of attempts, the same webhook-id and the same body:
 * every delivery of the notifications named (delivered ones too: the app may have lost one), or
 * every failed delivery. One with an attempt in flight is left to it.
 */
export async function replayNotifications(db: Kysely<Database>, which: { ids: readonly string[] } | { failed: true }): Promise<ReplayResult> {
  const chosen = 'ids' in which ? sql`d.notification_id = any(${which.ids}::text[])` : sql`d.status = 'failed'`;
  const { rows } = await sql<{ replayed: string[] | null }>`
    with chosen as (
      select d.delivery_id from notification_deliveries d
      where ${chosen} and (d.leased_until is null or d.leased_until < now())
      for update skip locked
    ), queued as (
      update notification_deliveries d
      set status = 'pending', attempts = 0, leased_until = null, next_attempt_at = now(), delivered_at = null
      from chosen where d.delivery_id = chosen.delivery_id
      returning d.delivery_id, d.notification_id
    )
    select array_agg(distinct notification_id order by notification_id) as replayed from queued`.execute(db);
  const replayed = rows[0]?.replayed ?? [];
  const skipped = 'ids' in which ? which.ids.filter((id) => !replayed.includes(id)) : [];
  return { replayed, skipped };
}
