-- 0031: the event types some running release acts on. A type that no module acts on (one nobody
-- lists, or one every module only records, as payment_intent.succeeded beside the checkout that
-- pays) is finished when it is claimed: stored 'processed' or 'ignored', with no job, so the
-- worker never fetches, locks or finishes it (src/fulfilment/finish-at-intake.ts).
--
-- Why a table, when each process knows its own modules: during a deploy two releases claim side by
-- side (docs/compatibility.md). A release that starts acting on a type registers it here when it
-- starts, before it takes a request; from then on the claims of the release before it, which only
-- recorded that type, give it a job too, so no event of it is finished unseen by the release that
-- acts on it. Rows are only added: a type a later release stops acting on keeps getting jobs, and
-- its events end as its handlers (or their absence) say, as before this table.
create table event_types_acted_on (
  -- A snapshot type (`invoice.paid`; a v1 thin type counts as its snapshot type) or a v2 thin type.
  event_type    text primary key,
  registered_at timestamptz not null default now()
);
