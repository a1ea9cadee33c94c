-- 0034: which account each Stripe customer belongs to, linked only from what this service created:
-- the customer of a Checkout Session it opened (src/modules/ledger/customer-links.ts). An account
-- may have several customers (each Checkout makes one unless given `customer`); a customer never
-- moves between accounts. A new table: nothing existing changes.
create table stripe_customers (
  customer_id text primary key,
  account_id text not null,
  -- The Checkout Session whose completion linked it.
  linked_by text not null,
  linked_at timestamptz not null default now()
);

create index stripe_customers_account_idx on stripe_customers (account_id);
