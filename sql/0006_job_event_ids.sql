-- 0006: the event ids a `process_stripe_event` job carries. Since this release a job carries the
-- events claimed together, as a graphile-worker batch job whose payload is [{"eventId": ...}, ...];
-- a job enqueued by an earlier release has the object {"eventId": ...}. The sweep asks which
-- 'processing' events have a job waiting (src/events/event-store.ts, reclaimStaleEvents); a
-- plain SQL function, so the planner inlines it into that query.
create function job_event_ids(payload json) returns setof text
language sql immutable parallel safe as $$
  select item ->> 'eventId'
  from json_array_elements(case json_typeof(payload) when 'array' then payload else json_build_array(payload) end) as item
$$;
