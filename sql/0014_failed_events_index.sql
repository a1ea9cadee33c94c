-- 0014: an index on the dead letters. The dashboard (every 5 s), `npm run status` and each metrics
-- scrape count the 'failed' events and list the newest; both read every stored event without it.
-- Partial, so it holds the few failed rows only. A plain create index, as 0004.
create index stripe_events_failed_idx on stripe_events (finished_at) where status = 'failed';
