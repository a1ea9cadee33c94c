-- 0033: where an event's and a notification's trace began (a W3C traceparent), so that a retry, a
-- reclaim or a replay of an event, and every delivery attempt of a notification, link back to the
-- webhook that brought it (docs/operations.md, "Tracing"). Nullable and written only while tracing
-- is on: the previous release neither reads nor writes it, and adding a nullable column without a
-- default rewrites no row.
alter table stripe_events add column trace_context text;
alter table notifications add column trace_context text;
