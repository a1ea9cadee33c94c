-- 0040 (billing module): usage-billed plans, and the Stripe customer of each subscription.
-- A plan that names a meter's event_name is sold through its Stripe Price, a recurring metered
-- Price on that meter: its subscriptions' runs are reported to the meter (src/modules/usage/)
-- instead of drawing credits. A meter event names the customer it bills, so a subscription keeps
-- the customer its Checkout Session made, stored with the link (subscription-links.ts).
-- New nullable columns and a replaced trigger function: no rewrite, brief locks; the release
-- before neither reads nor writes them.
alter table plans
  add column meter_event_name text,
  -- Stripe's rule for a meter's event_name: at most 100 characters; kept to what a log line can quote safely.
  add constraint plans_meter_event_name_shape check (meter_event_name ~ '^[A-Za-z0-9_.:-]{1,100}$'),
  -- A metered price is a Stripe Price on a meter: never inline price_data.
  add constraint plans_metered_through_price check (meter_event_name is null or stripe_price_id is not null);

alter table subscriptions
  add column stripe_customer_id text,
  add constraint subscriptions_stripe_customer_shape check (stripe_customer_id ~ '^cus_[A-Za-z0-9_]{1,250}$');

-- What a plan bills by never changes in place either.
create or replace function plans_pricing_immutable() returns trigger language plpgsql as $$
begin
  if (new.amount, new.currency, new.credits, new.interval, new.interval_count, new.stripe_price_id, new.stripe_product_id, new.meter_event_name)
     is distinct from (old.amount, old.currency, old.credits, old.interval, old.interval_count, old.stripe_price_id, old.stripe_product_id, old.meter_event_name) then
    raise exception 'plan %: amount, currency, credits, interval, Stripe Price and meter never change; create a new plan and archive this one', old.plan_id
      using errcode = 'restrict_violation';
  end if;
  return new;
end $$;
