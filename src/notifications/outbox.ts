// Outcome notifications, written where the outcome is (docs/notifications.md): a transactional
// outbox. A module tells of an outcome in the transaction that makes it — a grant, a revocation,
// a subscription's new state — and the notification and one delivery per endpoint of
// APP_WEBHOOK_URL commit with it or not at all. A rolled-back fulfilment leaves none behind; a
// committed one always has its deliveries due (src/notifications/delivery-pump.ts sends them).
//
// Once per outcome: the business key (notifications_one_per_outcome) decides, not a read. The
// outcomes themselves happen once (a grant is once per order), so a repeat of the event that made
// one (a second Event object, a replay, a reclaim) never asks again; should a module ask twice,
// the second is dropped by the constraint, and nothing else of its transaction is disturbed.
import { randomBytes } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { activeTraceparent, inSpan, tracingOn } from '../tracing/trace-context.js';

/** An outcome to tell the app of. */
export interface NewNotification {
  /** What happened, as the app reads it: 'order.paid', 'subscription.updated', ... */
  readonly type: string;
  /** Unique per outcome across every type ('order.paid:<order_id>'): a second one is dropped. */
  readonly key: string;
  readonly accountId: string | null;
  /** The account's count of notifications with this one (the ledger numbers them). */
  readonly sequence: number | null;
  /** The Stripe event whose fulfilment made the outcome, shown beside it; null for a module's own job. */
  readonly eventId: string | null;
  /** The notification's `data`, as sent. */
  readonly data: Readonly<Record<string, unknown>>;
}

/** What a module's handlers and tasks are given to notify with (the module contract's ModuleContext). */
export interface Notifications {
  /** False when APP_WEBHOOK_URL is unset: nothing would deliver a notification, so none is written. */
  readonly enabled: boolean;
  /** Writes the notifications and their deliveries in `tx`, the outcome's transaction. */
  add(tx: Transaction<Database>, notifications: readonly NewNotification[]): Promise<void>;
}

export interface OutboxConfig {
  readonly appWebhookUrls: readonly string[];
}

/** The webhook-id: Standard Webhooks suggests a prefix and a random part, as Svix's msg_. */
const newNotificationId = () => `msg_${randomBytes(16).toString('base64url')}`;

/** What a notification id looks like, as the admin API and the ops script check one given to them. */
export const NOTIFICATION_ID = /^msg_[\w-]{1,64}$/;

export function createOutbox({ appWebhookUrls: endpoints }: OutboxConfig): Notifications {
  if (endpoints.length === 0) return { enabled: false, add: () => Promise.resolve() };
  return {
    enabled: true,
    add: async (tx, notifications) => {
      if (notifications.length === 0) return;
      if (!tracingOn()) return write(tx, endpoints, notifications, null);
      // The keys name the business object ('order.paid:<order id>') and the accounts whom it
      // concerns: what an operator searches traces by.
      const attributes = {
        'stripe_inbox.notifications': notifications.length,
        'stripe_inbox.notification.types': notifications.map((n) => n.type),
        'stripe_inbox.notification.keys': notifications.map((n) => n.key),
        'stripe_inbox.account.ids': [...new Set(notifications.flatMap((n) => (n.accountId === null ? [] : [n.accountId])))],
      };
      // The notification keeps this span's context: each delivery attempt's span is its child.
      await inSpan('outbox write', { attributes }, () => write(tx, endpoints, notifications, activeTraceparent()));
    },
  };
}

async function write(
  tx: Transaction<Database>,
  endpoints: readonly string[],
  notifications: readonly NewNotification[],
  traceContext: string | null,
): Promise<void> {
  const now = new Date();
  const rows = notifications.map((n) => ({
    id: newNotificationId(),
    key: n.key,
    type: n.type,
    account_id: n.accountId,
    sequence: n.sequence,
    event_id: n.eventId,
    // Written once: every attempt sends these bytes, which the signature covers.
    body: JSON.stringify({ type: n.type, timestamp: now.toISOString(), data: n.data }),
    trace_context: traceContext,
  }));
  // One statement: the notifications and their deliveries, due now (src/notifications/delivery-pump.ts).
  await sql`
        with incoming as (
          select id, key, type, account_id, sequence, event_id, body, trace_context
          from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            as n(id text, key text, type text, account_id text, sequence int, event_id text, body text, trace_context text)
        ), written as (
          insert into notifications (notification_id, business_key, type, account_id, sequence, event_id, body, created_at, trace_context)
          select id, key, type, account_id, sequence, event_id, body, ${now}, trace_context from incoming
          on conflict (business_key) do nothing
          returning notification_id
        ), deliveries as (
          insert into notification_deliveries (delivery_id, notification_id, endpoint)
          select w.notification_id || '.' || e.n, w.notification_id, e.endpoint
          from written w cross join unnest(${endpoints}::text[]) with ordinality as e(endpoint, n)
        )
        select 1`.execute(tx);
}
