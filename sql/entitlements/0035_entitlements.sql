-- 0035: the entitlements module's mirror of Stripe's active entitlements, per Stripe customer
-- (src/modules/entitlements/). An account's entitlements are those of the customers linked to it
-- (the ledger's stripe_customers, 0034). New tables: nothing existing changes.

-- Each customer's active entitlements, exactly as the newest summary (or full read) said.
create table customer_entitlements (
  customer_id text not null,
  -- The Feature's lookup_key: what an app gates on.
  lookup_key text not null,
  feature_id text not null,
  -- The Feature's name, when a full read from Stripe gave it (a summary event names only the Feature's id).
  name text,
  primary key (customer_id, lookup_key)
);

-- Which summary each customer's entitlements reflect: an older one never overwrites it.
create table entitlement_summaries (
  customer_id text primary key,
  -- Whole seconds: the event's `created`, or when a full read from Stripe began.
  as_of timestamptz not null,
  -- The event applied; null for a full read.
  event_id text,
  applied_at timestamptz not null default now()
);
