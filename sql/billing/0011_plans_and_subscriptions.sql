-- 0011 (billing module): subscription plans, our subscriptions to them, and the grants of their
-- paid invoices. Versions are one sequence with the core's sql/ (src/db/migrate.ts).

create table plans (
  plan_id  text primary key,
  name     text not null,
  -- Per period, in the smallest currency unit (1900 = CHF 19.00).
  amount   integer not null,
  currency text not null,
  interval text not null,
  -- Granted once per paid invoice of a period.
  credits  integer not null,
  active   boolean not null default true,
  constraint plans_id_shape check (plan_id ~ '^[a-z0-9_-]{1,64}$'),
  constraint plans_amount_positive check (amount > 0),
  constraint plans_currency_iso check (currency ~ '^[a-z]{3}$'),
  constraint plans_interval_known check (interval in ('month', 'year')),
  constraint plans_credits_positive check (credits > 0)
);

insert into plans (plan_id, name, amount, currency, interval, credits)
values ('pro_monthly', 'Pro: 100 runs a month', 1900, 'chf', 'month', 100);

-- One per subscription started through POST /api/subscriptions, created before Stripe is called,
-- so every Checkout Session and Stripe subscription of ours names a row that exists.
create table subscriptions (
  subscription_id        text primary key,
  plan_id                text not null references plans,
  account_id             text not null,
  email                  text,
  -- The plan as it was when the subscription started: a later price change must not change what
  -- a period of this subscription grants.
  amount                 integer not null,
  currency               text not null,
  credits                integer not null,
  -- 'pending' until Stripe's subscription is known, then Stripe's own status.
  status                 text not null default 'pending',
  checkout_session_id    text unique,
  stripe_subscription_id text unique,
  current_period_end     timestamptz,
  cancel_at_period_end   boolean not null default false,
  -- When the Stripe state held here was true: the `created` second of the event that set it, or
  -- when it was fetched. An older delivery never overwrites it (src/modules/billing/subscription-state.ts).
  stripe_state_at        timestamptz,
  created_at             timestamptz not null default now(),
  updated_at             timestamptz not null default now(),
  constraint subscriptions_status_shape check (status ~ '^[a-z_]{1,32}$'),
  constraint subscriptions_credits_positive check (credits > 0),
  constraint subscriptions_state_known_when_linked check (status = 'pending' or stripe_state_at is not null)
);
create index subscriptions_account_idx on subscriptions (account_id);

-- The business key of subscription fulfilment: one grant per paid invoice, whatever happens to
-- event rows (a second Event object, a resend after prune, a replay).
create table invoice_grants (
  invoice_id        text primary key,
  subscription_id   text not null references subscriptions,
  account_id        text not null,
  credits           integer not null,
  amount_paid       integer not null,
  currency          text not null,
  billing_reason    text not null,
  -- No foreign key: events are pruned after retention, grants are kept.
  event_id          text not null,
  granted_at        timestamptz not null default now(),
  -- Refunds, as for orders: the largest amount Stripe reported, the credits its refunds call for
  -- (never goes down) and what was taken back (never more than the account had left).
  refunded_amount   integer not null default 0,
  revocation_target integer not null default 0,
  revoked_credits   integer not null default 0,
  constraint invoice_grants_credits_positive check (credits > 0),
  constraint invoice_grants_refunded_within_paid check (refunded_amount between 0 and amount_paid),
  constraint invoice_grants_revoked_within_target check (revoked_credits between 0 and revocation_target),
  constraint invoice_grants_target_within_credits check (revocation_target between 0 and credits)
);
create index invoice_grants_subscription_idx on invoice_grants (subscription_id);

-- Which invoice a PaymentIntent paid (invoice_payment.paid), so a refund (charge.refunded names
-- the PaymentIntent) finds the grant it takes credits back from.
create table invoice_payments (
  payment_intent_id text primary key,
  invoice_id        text not null,
  linked_at         timestamptz not null default now()
);
create index invoice_payments_invoice_idx on invoice_payments (invoice_id);
