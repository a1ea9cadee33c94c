-- 0048 (credits module): an account's orders whose refunds and disputes took back fewer credits
-- than they claim (credits in use then stay used). A reversed run pays them
-- (src/modules/credits/credit-revocations.ts, settleOrderShortfalls) and looks them up by account
-- on every reversal. Partial: only revocations short of their target, a small part of a table
-- that is itself only the refunded and disputed orders.
create index credit_revocations_short_idx on credit_revocations (account_id) where revoked_credits < target_credits;
