-- 0005: store event payloads uncompressed. Stripe's events are a few KB, just past the size at
-- which Postgres compresses a value (pglz) before storing it out of line; compressing each one
-- was the largest part of the database's CPU per webhook (docs/benchmarks.md, ingest). The cost
-- is disk: about twice the space per payload, for the retention period only (EVENT_RETENTION_DAYS).
-- Only rows written from now on are affected; no table rewrite, a brief lock.
alter table stripe_events alter column payload set storage external;
