-- 0001: the inbox (stripe_events) with its state machine, the business it serves (packages,
-- orders, a credit ledger whose keys make each grant happen once) and inbound API idempotency.

-- One row per Stripe Event object. The primary key is the claim: any number of deliveries of one
-- event.id, from any number of containers, produce this one row (DESIGN invariant 3).
create table stripe_events (
  event_id          text primary key,
  type              text not null,
  -- data.object.id; null for types whose object has no id (invoice.upcoming).
  object_id         text,
  livemode          boolean not null,
  stripe_created_at timestamptz not null,
  payload           jsonb not null,
  status            text not null default 'processing',
  -- Handler failures and reclaims alike: graphile-worker's own counter restarts on re-enqueue.
  attempts          integer not null default 0,
  last_error        text,
  -- The event that produced the business effect this one would have repeated.
  duplicate_of      text,
  received_at       timestamptz not null default now(),
  -- Last (re-)enqueue: the sweep measures staleness from here, not from receipt.
  enqueued_at       timestamptz not null default now(),
  finished_at       timestamptz,
  constraint stripe_events_event_id_length check (char_length(event_id) between 1 and 255),
  constraint stripe_events_status_known
    check (status in ('processing', 'processed', 'ignored', 'duplicate', 'failed')),
  constraint stripe_events_finished_when_not_processing
    check ((status = 'processing') = (finished_at is null)),
  constraint stripe_events_failed_has_error check (status <> 'failed' or last_error is not null),
  constraint stripe_events_duplicate_names_original
    check ((status = 'duplicate') = (duplicate_of is not null)),
  constraint stripe_events_attempts_not_negative check (attempts >= 0)
);

-- Serves the sweep and the "oldest processing" figure: only unfinished rows are indexed, so
-- their cost follows the backlog, not the table's size.
create index stripe_events_processing_idx on stripe_events (enqueued_at) where status = 'processing';
create index stripe_events_object_idx on stripe_events (object_id, type);
create index stripe_events_received_idx on stripe_events (received_at);

create table packages (
  package_id text primary key,
  name       text not null,
  -- Smallest currency unit, as Stripe counts (4900 = CHF 49.00).
  amount     integer not null,
  currency   text not null,
  credits    integer not null,
  active     boolean not null default true,
  constraint packages_id_shape check (package_id ~ '^[a-z0-9_-]{1,64}$'),
  constraint packages_amount_positive check (amount > 0),
  constraint packages_currency_iso check (currency ~ '^[a-z]{3}$'),
  constraint packages_credits_positive check (credits > 0)
);

insert into packages (package_id, name, amount, currency, credits)
values ('starter', 'Starter: 40 runs', 4900, 'chf', 40);

create table orders (
  order_id            text primary key,
  package_id          text not null references packages,
  account_id          text not null,
  email               text,
  -- Price and credits are copied from the package when the order is made: a later price change
  -- must not change what a paid order is worth.
  amount              integer not null,
  currency            text not null,
  credits             integer not null,
  status              text not null default 'pending',
  checkout_session_id text unique,
  created_at          timestamptz not null default now(),
  paid_at             timestamptz,
  constraint orders_status_known check (status in ('pending', 'paid', 'refunded')),
  constraint orders_paid_at_when_paid check ((status = 'pending') = (paid_at is null)),
  constraint orders_amount_positive check (amount > 0),
  constraint orders_credits_positive check (credits > 0)
);
create index orders_account_idx on orders (account_id);

-- The business key of fulfilment: one grant per order, whatever happens to event rows (pruned,
-- replayed, or a second Event object for the same payment). DESIGN invariant 5.
create table credit_grants (
  order_id   text primary key references orders,
  account_id text not null,
  credits    integer not null,
  -- No foreign key: events are pruned after retention, grants are kept.
  event_id   text not null,
  granted_at timestamptz not null default now(),
  constraint credit_grants_credits_positive check (credits > 0)
);

-- Running balance per account, updated in the same transaction as the ledger rows. A run is
-- consumed with one conditional UPDATE, which the row lock serialises per account.
create table account_credits (
  account_id text primary key,
  granted    integer not null default 0,
  used       integer not null default 0,
  constraint account_credits_granted_not_negative check (granted >= 0),
  constraint account_credits_used_within_granted check (used between 0 and granted)
);

-- Idempotency-Key of POST /api/checkout, kept like Stripe keeps its own: same key and body
-- replays the first response; the order is created once and reused by retries.
create table api_idempotency_keys (
  idempotency_key text primary key,
  request_hash    text not null,
  order_id        text not null references orders,
  response_status integer,
  response_body   jsonb,
  created_at      timestamptz not null default now(),
  constraint api_idempotency_keys_response_complete
    check ((response_status is null) = (response_body is null))
);
