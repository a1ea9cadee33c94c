-- 0016 (billing module): whether Stripe collects payment for a subscription. Stripe pauses
-- collection (the subscription's pause_collection) without changing its status: it stays
-- 'active', and its invoices are voided, kept as drafts or marked uncollectible until it resumes,
-- so none is paid and none grants. Held like the rest of the subscription's state, and ordered
-- with it (stripe_state_at). Null: collecting. New nullable columns: no rewrite, a brief lock.
alter table subscriptions
  add column pause_behavior   text,
  add column pause_resumes_at timestamptz,
  add constraint subscriptions_pause_behavior_shape check (pause_behavior ~ '^[a-z_]{1,32}$'),
  add constraint subscriptions_pause_resumes_when_paused check (pause_resumes_at is null or pause_behavior is not null);
