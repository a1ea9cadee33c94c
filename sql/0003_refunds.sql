-- 0003: refunds. A paid order remembers its PaymentIntent (refunds name it) and how much Stripe
-- has refunded so far; credits taken back are kept per order; ops-initiated refunds get a
-- sequence number per order, carried in their outbound Idempotency-Key.

alter table orders add column payment_intent_id text;
-- Monotonic: the largest amount_refunded Stripe has reported, so a stale or reordered event can
-- never lower it.
alter table orders add column refunded_amount integer not null default 0;
alter table orders add constraint orders_refunded_within_amount check (refunded_amount between 0 and amount);
create index orders_payment_intent_idx on orders (payment_intent_id) where payment_intent_id is not null;

-- Credits taken back from an order's grant because of refunds. One row per order, holding the
-- target the refunds so far call for: repeated or reordered refund events converge on the same
-- target instead of revoking again. revoked_credits is what was actually taken: never more than
-- the account had left (credits already used are not clawed back).
create table credit_revocations (
  order_id        text primary key references credit_grants,
  account_id      text not null,
  target_credits  integer not null,
  revoked_credits integer not null,
  updated_at      timestamptz not null default now(),
  constraint credit_revocations_revoked_within_target check (revoked_credits between 0 and target_credits)
);

-- Inbound Idempotency-Keys now serve two operations. Existing rows are checkouts.
alter table api_idempotency_keys add column operation text not null default 'checkout';
alter table api_idempotency_keys add constraint api_idempotency_keys_operation_known
  check (operation in ('checkout', 'refund'));
-- For a refund: its number among the order's refunds, which names the outbound key, and its
-- amount, fixed when the key is registered so every retry sends Stripe the same request.
alter table api_idempotency_keys add column refund_seq integer;
alter table api_idempotency_keys add column refund_amount integer;
alter table api_idempotency_keys add constraint api_idempotency_keys_refund_has_seq
  check ((operation = 'refund') = (refund_seq is not null and refund_amount is not null));
create unique index api_idempotency_keys_refund_seq_idx on api_idempotency_keys (order_id, refund_seq)
  where refund_seq is not null;
