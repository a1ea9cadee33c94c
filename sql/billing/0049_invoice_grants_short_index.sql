-- 0049 (billing module): an account's paid periods whose refunds and disputes took back fewer
-- credits than they claim (credits in use then stay used). A reversed run pays them
-- (src/modules/billing/invoice-refunds.ts, settlePeriodShortfalls) and looks them up by account on
-- every reversal: without this, in every paid period ever granted. Partial: only those short of
-- their target.
create index invoice_grants_short_idx on invoice_grants (account_id) where revoked_credits < revocation_target;
