-- 0017: keep each event's payload as the text Stripe signed (json) rather than as jsonb. The
-- claim parsed every body into jsonb's binary form and fulfilment printed it back to text for the
-- service to parse again: the largest part of the database's CPU per webhook after the commit
-- (docs/benchmarks.md). json keeps the bytes as sent and only checks that they are JSON; the
-- service reads whole payloads and JSON.parses them either way. What it costs: a query that looks
-- inside payloads (`payload #>> ...`, the modules' record lookups) parses the text of each row it
-- reads. The webhook route still refuses what jsonb could not hold, so a later move back is a cast.
--
-- Rewrites the table under an ACCESS EXCLUSIVE lock (docs/migrations.md): deliveries meanwhile
-- wait, and past 10 s are answered 503 and retried by Stripe. The previous release keeps working
-- during an overlapping deploy: its claims insert jsonb, which Postgres casts on assignment, and
-- it reads payloads as parsed JSON, which a json column gives it too. SET STORAGE runs before
-- the rewrite, so the rewritten rows are uncompressed too (as 0005 chose).
alter table stripe_events
  alter column payload type json using payload::json,
  alter column payload set storage external;
