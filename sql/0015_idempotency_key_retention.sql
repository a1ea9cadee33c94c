-- 0015: inbound Idempotency-Keys are pruned with the events, past EVENT_RETENTION_DAYS, except
-- the keys a module counts. A refund's number among its order's refunds is how many refund keys
-- name the order (countKeys), so those keys are the refunds' records and stay.
--
-- Default true: a key the release before inserts during a rolling deploy is kept and counted,
-- the safe side. This release says false for every key its module does not count.
alter table api_idempotency_keys add column counted boolean not null default true;
-- The only operation counted so far is the credits module's refund.
update api_idempotency_keys set counted = false where operation <> 'refund';
-- What prune reads: the keys it may delete, oldest first.
create index api_idempotency_keys_prunable_idx on api_idempotency_keys (created_at) where not counted;
