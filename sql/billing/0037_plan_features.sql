-- 0037 (billing module): the Stripe Features (their lookup keys) a plan grants, shown in the
-- catalog; Stripe grants them through the subscription's Product (src/modules/entitlements/).
-- A constant default: no table rewrite, and the previous release neither reads nor writes it.
alter table plans add column features text[] not null default '{}';
