-- 0021 (billing module): plans bill every day, week, month or year, every interval_count of them,
-- may be sold through a Stripe Price instead of inline price_data, and what money and credits
-- depend on never changes in place once created. Expand-only: the previous release reads plans
-- with interval month or year only, which the seeded and its own rows are; it never updates a
-- plan's price, so the trigger refuses nothing it does.

alter table plans
  drop constraint plans_interval_known,
  add constraint plans_interval_known check (interval in ('day', 'week', 'month', 'year')),
  add column interval_count    integer not null default 1,
  add column stripe_price_id   text,
  -- The Price's Product, so that product.updated finds the rows it archives.
  add column stripe_product_id text,
  -- Stripe's bound: at most three years between two invoices.
  add constraint plans_interval_count_range check (
    interval_count >= 1 and interval_count <= case interval when 'day' then 1095 when 'week' then 156 when 'month' then 36 else 3 end),
  add constraint plans_stripe_price_shape check (stripe_price_id ~ '^price_[A-Za-z0-9_]{1,250}$'),
  add constraint plans_stripe_product_with_price check ((stripe_price_id is null) = (stripe_product_id is null));

-- One plan per Price: importing from Stripe twice finds the row it made.
create unique index plans_stripe_price_idx on plans (stripe_price_id) where stripe_price_id is not null;
create index plans_stripe_product_idx on plans (stripe_product_id) where stripe_product_id is not null;

-- A subscription copies amount, currency and credits, but checkout reads the interval and the
-- Price from the plan: create a new plan and archive this one instead. Only name and active may change.
create function plans_pricing_immutable() returns trigger language plpgsql as $$
begin
  if (new.amount, new.currency, new.credits, new.interval, new.interval_count, new.stripe_price_id, new.stripe_product_id)
     is distinct from (old.amount, old.currency, old.credits, old.interval, old.interval_count, old.stripe_price_id, old.stripe_product_id) then
    raise exception 'plan %: amount, currency, credits, interval and Stripe Price never change; create a new plan and archive this one', old.plan_id
      using errcode = 'restrict_violation';
  end if;
  return new;
end $$;

create trigger plans_pricing_immutable before update on plans
  for each row execute function plans_pricing_immutable();
