-- 0036 (credits module): the Stripe Features (their lookup keys) a package grants, shown in the
-- catalog. A package that names any asks Checkout to make a Stripe customer (customer_creation
-- 'always'), whose entitlements then become the buyer's account's (src/modules/entitlements/).
-- A constant default: no table rewrite, and the previous release neither reads nor writes it.
alter table packages add column features text[] not null default '{}';
