-- 0024: one happening, two Event objects. While a team moves from a snapshot endpoint to a thin
-- event destination, both run for the same account (Stripe's migration guide): a snapshot event
-- `evt_A` and a thin notification `evt_T` whose `snapshot_event` is `evt_A` tell of one
-- happening. Each claim also inserts its snapshot event's id here (a snapshot event its own id,
-- a thin notification its `snapshot_event`), in the claim's statement: the primary key decides
-- which of the two fulfils, in either order and under concurrency, and the other is stored
-- 'duplicate' of it. A constraint, not a read of stripe_events followed by a write.
--
-- A thin notification without `snapshot_event` (a v2 type, or a destination whose events have
-- none) has no row here: nothing else tells of it.
--
-- Pruned with the events (src/prune/prune-events.ts): once an alias is gone a late sibling is
-- claimed anew, and fulfilment's business keys make it a duplicate (DESIGN invariant 5).
create table snapshot_claims (
  snapshot_event_id text primary key,
  event_id          text not null,
  claimed_at        timestamptz not null default now(),
  constraint snapshot_claims_id_length check (char_length(snapshot_event_id) between 1 and 255)
);

-- Events claimed before this release were all snapshot events: each is its own happening, so a
-- thin sibling arriving after the upgrade ends 'duplicate' of it.
insert into snapshot_claims (snapshot_event_id, event_id, claimed_at)
select event_id, event_id, received_at from stripe_events;

create index snapshot_claims_claimed_at on snapshot_claims (claimed_at);
