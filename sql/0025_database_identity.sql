-- 0025: the database's identity as the service last saw it (src/reconcile/database-identity.ts).
-- After an asynchronous failover or a restore from backup, events acknowledged to Stripe may be
-- missing, and Stripe never resends an event it got a 2xx for. The identity changes then (a
-- promoted standby's new timeline, another cluster's system identifier, a dump restored into
-- another database), while this row, replicated or dumped with the rest, still names the old one:
-- the difference queues a reconcile. One row; null where the role may not read the value.
create table database_identity (
  singleton         boolean primary key default true,
  system_identifier bigint,
  timeline_id       integer,
  database_oid      oid not null,
  recorded_at       timestamptz not null default now(),
  constraint database_identity_one_row check (singleton)
);
