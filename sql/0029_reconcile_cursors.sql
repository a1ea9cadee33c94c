-- 0029: where the scheduled reconcile stopped when it ran out of RECONCILE_MAX_CALLS, per Stripe
-- list (src/reconcile/reconcile-cursors.ts), so that the next run reads on from there to the start
-- of its window instead of the newest RECONCILE_MAX_CALLS pages again: with more events in the
-- window than one run may read, the older ones were never reached. No row at all: the next run
-- starts a pass from the newest. The previous release neither reads nor writes it.
create table reconcile_cursors (
  -- 'snapshot' (the Events API) or 'thin' (the v2 events list).
  list        text primary key,
  -- The next page's call: the Events API's starting_after (the last event id read), or the v2
  -- list's next_page_url. Null: this pass read the list to the start of its window, and goes on
  -- with the other list.
  resume_from text,
  saved_at    timestamptz not null default now(),
  constraint reconcile_cursors_list_known check (list in ('snapshot', 'thin'))
);
