-- 0004: an index on finished_at, for retention (prune deletes by it) and the dashboard's
-- per-minute chart, both of which would otherwise scan every event ever kept.
create index stripe_events_finished_idx on stripe_events (finished_at) where finished_at is not null;
