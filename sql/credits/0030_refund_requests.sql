-- 0030 (credits module): every refund asked through the admin API is recorded with its amount
-- before Stripe is called, so that refunds of one order asked at once, from any number of
-- processes, never together ask for more than the order's amount (refunds.ts). Expand-only: the
-- previous release neither reads nor writes this table.

create table refund_requests (
  order_id         text not null references orders,
  -- Its number among the order's refunds, which names its outbound key refund:<order_id>:<seq>.
  seq              integer not null,
  amount           integer not null,
  -- requested: holds its amount back while Stripe is asked (or until a retry with its key, if
  -- its request died waiting). succeeded: Stripe created the refund (Stripe's own status may
  -- still be pending). failed: Stripe's call failed; holds nothing back until a retry with the
  -- same Idempotency-Key asks again.
  status           text not null default 'requested',
  stripe_refund_id text,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  primary key (order_id, seq),
  constraint refund_requests_seq_positive check (seq > 0),
  constraint refund_requests_amount_positive check (amount > 0),
  constraint refund_requests_status_known check (status in ('requested', 'succeeded', 'failed')),
  constraint refund_requests_refund_id_when_succeeded check ((status = 'succeeded') = (stripe_refund_id is not null))
);

-- The refunds asked before this table, from their Idempotency-Keys (which keep the refund's
-- number and amount for good): those Stripe answered count as succeeded, the others hold nothing
-- back, as a failed call does from now on.
insert into refund_requests (order_id, seq, amount, status, stripe_refund_id, created_at)
select subject->>'orderId', (subject->>'seq')::int, (subject->>'amount')::int,
       case when response_body->>'refund_id' is null then 'failed' else 'succeeded' end,
       response_body->>'refund_id', created_at
from api_idempotency_keys
where operation = 'refund';
