-- 0032: the wake passes over a waiting row that another transaction holds, instead of waiting for
-- it. Only a transaction that is about to run, re-enqueue or end that very event holds such a row:
-- a fulfilment re-running it (its wait gave up, or the sweep reclaimed it), a replay, the sweep.
-- Waiting for it could deadlock: the wake holds the key's lock (sql/0026), and a fulfilment that
-- holds the row and may wait again takes that key before it reads. Passing over it loses nothing:
-- that fulfilment reads what the waker wrote once the waker commits (it waits for the key), and
-- the others enqueue the event themselves.
create or replace function stripe_inbox_wake_events(keys text[], job_key_prefix text, per_job int)
returns table (woken_event_id text, woken_job_key text)
language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock(26, hashtext(k)) from (select distinct unnest(keys) as k order by 1) as sorted;
  return query
    with waiting as (
      select e.event_id from stripe_events e
      where e.waits_for && keys and e.status = 'processing'
      for update skip locked
    ), keyed as (
      select event_id, job_key_prefix || ((row_number() over (order by event_id) - 1) / per_job) as job_key from waiting
    )
    update stripe_events e set waits_for = null, enqueued_at = now(), job_key = k.job_key
    from keyed k
    where e.event_id = k.event_id
    returning e.event_id, e.job_key;
end
$$;
