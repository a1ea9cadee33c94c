-- 0026: an event that waits for something still to come (a dispute before its payment's
-- checkout.session.completed, a subscription's events before the checkout that links it) is parked
-- instead of retried: it names what it waits for and until when, spends no attempt while it waits,
-- and is run again the moment what it waits for commits (docs/events.md, "Waiting for what comes later").
--
-- waits_for: the keys it waits for, e.g. {payment_intent:pi_…}; meaningful only while the row is
--   'processing' (finishing a row leaves it as it was, so the finish statement, run for every
--   event, stays as it is; and a release before this one finishes rows without knowing of it).
-- wait_until: when the wait gives up (the event then ends 'ignored' or 'failed' with its reason);
--   set by its first wait, kept across wakes, cleared by a replay.
alter table stripe_events add column waits_for text[], add column wait_until timestamptz;

-- The wake looks waiting rows up by key; only waiting rows are in it, so claims pay nothing for it.
create index stripe_events_waits_idx on stripe_events using gin (waits_for) where waits_for is not null;

-- Wakes the events waiting for any of `keys`: they get a fresh job key (`job_key_prefix` and a batch
-- number, `per_job` events a job) and are returned, for the caller to enqueue in the same statement.
--
-- Why a function: the waker and a waiter race. The waiter takes the keys' advisory locks, then
-- reads whether what it waits for exists, then records its wait and commits (releasing the locks).
-- The waker writes what was waited for, then calls this, which takes the same locks and only then
-- looks for waiting rows. The look must see every wait committed before the lock was granted: a
-- statement's snapshot is taken when it starts, before the lock, but each query inside a VOLATILE
-- function takes a fresh one (READ COMMITTED). Either the waiter holds the lock first (its wait
-- is committed before the waker looks) or the waker does (the waiter's read, after the lock, sees
-- what was written). Locks are taken in key order, so two wakers cannot deadlock on them.
-- Class 26 of the two-key advisory lock space (which does not overlap the one-key space the
-- migrations' lock uses): 0026's number.
create function stripe_inbox_wake_events(keys text[], job_key_prefix text, per_job int)
returns table (woken_event_id text, woken_job_key text)
language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock(26, hashtext(k)) from (select distinct unnest(keys) as k order by 1) as sorted;
  return query
    with waiting as (
      select e.event_id, job_key_prefix || ((row_number() over (order by e.event_id) - 1) / per_job) as job_key
      from stripe_events e
      where e.waits_for && keys and e.status = 'processing'
    )
    update stripe_events e set waits_for = null, enqueued_at = now(), job_key = w.job_key
    from waiting w
    where e.event_id = w.event_id and e.waits_for && keys and e.status = 'processing'
    returning e.event_id, e.job_key;
end
$$;

-- What a waiter takes before it reads (the other half of the protocol above).
create function stripe_inbox_lock_wait_keys(keys text[]) returns void
language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock(26, hashtext(k)) from (select distinct unnest(keys) as k order by 1) as sorted;
end
$$;
