-- 0041 (usage module): each run of a usage-billed plan's account (POST /api/accounts/:id/runs) is
-- a usage record, and its report to the plan's Stripe meter an outbox row, written by one
-- statement (src/modules/usage/usage-records.ts). The pump (report-pump.ts) sends each report as
-- a meter event whose identifier is the usage id, once.

-- Business records: prune never deletes them.
create table usage_records (
  -- The meter event's identifier: what Stripe dedupes the event on, within at least 24 hours.
  usage_id        text primary key,
  account_id      text not null,
  -- The billing module's subscription it was billed under (no foreign key: another module's table).
  subscription_id text not null,
  event_name      text not null,
  quantity        integer not null,
  -- The meter event's timestamp.
  used_at         timestamptz not null default now(),
  constraint usage_records_id_shape check (usage_id ~ '^usage_[0-9a-f]{32}$'),
  constraint usage_records_quantity_positive check (quantity > 0)
);
create index usage_records_account_idx on usage_records (account_id, used_at);

-- The outbox: one report per record. Sent reports are pruned after retention; their records stay.
create table usage_reports (
  usage_id           text primary key references usage_records on delete cascade,
  stripe_customer_id text not null,
  status             text not null default 'pending',
  attempts           integer not null default 0,
  -- When a pending report is due: a claim moves it past its send, as a lease.
  next_attempt_at    timestamptz not null default now(),
  -- When the first send that may have reached Stripe began: once Stripe's identifier window
  -- (24 hours) may have passed since, a report whose answer was lost is checked, never resent blindly.
  first_sent_at      timestamptz,
  sent_at            timestamptz,
  last_error         text,
  created_at         timestamptz not null default now(),
  constraint usage_reports_status_known check (status in ('pending', 'sent', 'failed')),
  constraint usage_reports_sent_when_sent check ((status = 'sent') = (sent_at is not null))
);
-- The pump's claim: the due pending reports, oldest first.
create index usage_reports_due_idx on usage_reports (next_attempt_at) where status = 'pending';
-- The operator's list, and the failed count.
create index usage_reports_failed_idx on usage_reports (created_at) where status = 'failed';
-- Retention: sent reports by when they were sent.
create index usage_reports_sent_idx on usage_reports (sent_at) where status = 'sent';
-- The check past the window: what else of the customer's was reported for the same minute.
create index usage_reports_customer_idx on usage_reports (stripe_customer_id);
