-- 0008: an inbound Idempotency-Key is "in flight" while its lease runs, a committed state, instead
-- of while a row lock is held on a pooled connection for the whole call to Stripe (a slow Stripe
-- then held every connection). A request that dies leaves a lease that simply expires.
-- Nullable: the previous release never sets it and keeps its row-lock behaviour during a deploy.
alter table api_idempotency_keys add column leased_until timestamptz;
