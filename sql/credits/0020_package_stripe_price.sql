-- 0020 (credits module): a package may be sold through a Stripe Price instead of inline
-- price_data, and what money and credits depend on never changes in place once created.
-- Expand-only: the previous release neither reads nor writes these columns, and never updates a
-- package's price, so the trigger refuses nothing it does.

alter table packages
  add column stripe_price_id   text,
  -- The Price's Product, so that product.updated finds the rows it archives.
  add column stripe_product_id text,
  add constraint packages_stripe_price_shape check (stripe_price_id ~ '^price_[A-Za-z0-9_]{1,250}$'),
  add constraint packages_stripe_product_with_price check ((stripe_price_id is null) = (stripe_product_id is null));

-- One package per Price: importing from Stripe twice finds the row it made.
create unique index packages_stripe_price_idx on packages (stripe_price_id) where stripe_price_id is not null;
create index packages_stripe_product_idx on packages (stripe_product_id) where stripe_product_id is not null;

-- An order copies amount, currency and credits, but checkout reads the Price from the package, and
-- an operator reading the catalog must see what was sold: create a new package and archive this
-- one instead. Only name and active may change.
create function packages_pricing_immutable() returns trigger language plpgsql as $$
begin
  if (new.amount, new.currency, new.credits, new.stripe_price_id, new.stripe_product_id)
     is distinct from (old.amount, old.currency, old.credits, old.stripe_price_id, old.stripe_product_id) then
    raise exception 'package %: amount, currency, credits and Stripe Price never change; create a new package and archive this one', old.package_id
      using errcode = 'restrict_violation';
  end if;
  return new;
end $$;

create trigger packages_pricing_immutable before update on packages
  for each row execute function packages_pricing_immutable();
