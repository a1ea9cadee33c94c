-- 0018: outcome notifications to the selling app (docs/notifications.md), a transactional outbox.
-- A notification is written in the transaction of the outcome it tells of (a grant, a revocation,
-- a subscription's new state), with one delivery per endpoint of APP_WEBHOOK_URL, so it exists
-- exactly when the outcome committed. The deliveries are their own queue (next_attempt_at,
-- leased_until), which src/notifications/delivery-pump.ts relays. The business key makes it once per
-- outcome, whatever repeats the event that produced it (a second Event object, a replay, a reclaim).
create table notifications (
  -- The Standard Webhooks webhook-id, the same on every attempt: the receiver's deduplication key.
  notification_id text primary key,
  -- What it tells of, named by the module that sends it: 'order.paid:<order_id>', ...
  business_key    text not null,
  type            text not null,
  account_id      text,
  -- The account's count of notifications when this one was written (the ledger's account_credits.notified).
  sequence        int,
  -- The event whose fulfilment produced it; none for an outcome of a module's own job (a refresh).
  event_id        text,
  -- The exact bytes POSTed on every attempt: the signature covers them.
  body            text not null,
  created_at      timestamptz not null default now(),
  constraint notifications_one_per_outcome unique (business_key)
);
create index notifications_event_id on notifications (event_id) where event_id is not null;
create index notifications_created_at on notifications (created_at);

-- No foreign keys from deliveries to notifications, nor from attempts to deliveries: a
-- connection keeps the plan of a foreign key's check from its first use, and these tables start
-- empty, so a burst of outcomes on a new install checked every row by scanning the whole table
-- (a drain slowed threefold). The three are written together by one statement each
-- (src/notifications/outbox.ts, delivery-pump.ts) and deleted together
-- (src/notifications/retention.ts).
create table notification_deliveries (
  -- '<notification_id>.<n>': the n-th endpoint the notification was queued for.
  delivery_id     text primary key,
  notification_id text not null,
  -- The URL as configured when the notification was written; it keeps being delivered there.
  endpoint        text not null,
  status          text not null default 'pending',
  -- Attempts since it was queued or last replayed.
  attempts        int not null default 0,
  -- While in the future an attempt is in flight; a past one is an attempt whose worker died
  -- before it recorded anything, which the sweep frees (src/notifications/reclaim.ts).
  leased_until    timestamptz,
  next_attempt_at timestamptz not null default now(),
  last_attempt_at timestamptz,
  last_status_code int,
  last_error      text,
  delivered_at    timestamptz,
  constraint notification_deliveries_status_known check (status in ('pending', 'delivered', 'failed')),
  constraint notification_deliveries_delivered_at check ((status = 'delivered') = (delivered_at is not null)),
  constraint notification_deliveries_failed_has_error check (status <> 'failed' or last_error is not null),
  constraint notification_deliveries_one_per_endpoint unique (notification_id, endpoint)
);
-- What the pumps take next: due, and held by no attempt.
create index notification_deliveries_due on notification_deliveries (next_attempt_at) where status = 'pending' and leased_until is null;
-- What status, metrics, the dead letter and the sweep read: everything not yet delivered.
create index notification_deliveries_undelivered on notification_deliveries (status, endpoint) where status <> 'delivered';

create table notification_attempts (
  delivery_id  text not null,
  started_at   timestamptz not null,
  duration_ms  int not null,
  -- The HTTP status, when an answer came.
  status_code  int,
  -- Why it did not count as delivered; null for a 2xx.
  error        text
);
create index notification_attempts_delivery on notification_attempts (delivery_id, started_at);
