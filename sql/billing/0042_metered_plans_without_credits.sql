-- 0042 (billing module): a usage-billed plan may grant no credits. Its runs are reported to its
-- meter instead of drawing credits (src/modules/usage/), so credits it granted would wait unused
-- until the subscription ended; a team that wants an allowance beside the usage still gives some.
-- Its subscriptions copy the 0, and its paid invoices record a grant of 0 (the invoice stays the
-- business key of its period, which refunds and disputes find). Every other plan grants at least one.
-- The release before never writes a 0; the checks are valid for every existing row.
alter table plans
  drop constraint plans_credits_positive,
  add constraint plans_credits_positive check (credits > 0 or (credits = 0 and meter_event_name is not null));

alter table subscriptions
  drop constraint subscriptions_credits_positive,
  add constraint subscriptions_credits_not_negative check (credits >= 0);

alter table invoice_grants
  drop constraint invoice_grants_credits_positive,
  add constraint invoice_grants_credits_not_negative check (credits >= 0);
