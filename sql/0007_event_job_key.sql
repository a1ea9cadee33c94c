-- 0007: the key of the graphile-worker job of each event's last enqueue. The sweep must know
-- whether an event still has a job waiting; graphile-worker's public view (graphile_worker.jobs)
-- shows a job's key but not its payload, so every job we add gets a fresh key and the events it
-- carries name it, written in the same transaction (src/events/enqueue.ts). Null on rows enqueued
-- by a release before this one: the sweep matches those by time (src/events/event-store.ts).
-- A nullable column: the previous release keeps inserting without it.
alter table stripe_events add column job_key text;
