-- 0012: a subscription keeps the price of its plan as it was when it started, and gets the
-- checks the plan has: a positive amount, and a currency as Stripe writes it (three lower-case
-- letters). Every row so far was copied from a plan, which already had to pass them; the table
-- holds a row per subscription ever started, so the check is quick and its lock brief.
alter table subscriptions
  add constraint subscriptions_amount_positive check (amount > 0),
  add constraint subscriptions_currency_iso check (currency ~ '^[a-z]{3}$');
