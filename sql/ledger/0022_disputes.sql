-- 0022: disputes (chargebacks) of purchases that granted credits, one row per Stripe dispute.
-- Stripe's dispute events may arrive in any order, repeated, or as second Event objects, so the
-- row keeps what they established, never undone by a later delivery: whether funds were withdrawn
-- and whether they were reinstated. The purchase's credits follow from those two facts (taken back
-- while withdrawn and not reinstated). `purchase` is the selling module's key of what the charge
-- paid ('order:<order_id>', 'invoice:<invoice_id>'); the credits moved are kept here so a
-- reinstatement gives back what this dispute took, and ops can read both.
create table disputes (
  dispute_id        text primary key,
  charge_id         text not null,
  payment_intent_id text not null,
  purchase          text not null,
  account_id        text not null,
  -- Stripe's own status (needs_response, under_review, won, lost, ...), from the newest event seen.
  status            text not null,
  status_at         timestamptz not null,
  funds_withdrawn   boolean not null default false,
  funds_reinstated  boolean not null default false,
  credits_taken     integer not null default 0,
  credits_returned  integer not null default 0,
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now(),
  -- A reinstatement arriving first implies the withdrawal it reverses.
  constraint disputes_reinstated_after_withdrawn check (funds_withdrawn or not funds_reinstated),
  constraint disputes_returned_within_taken check (credits_taken >= 0 and credits_returned between 0 and credits_taken)
);
create index disputes_purchase_idx on disputes (purchase);
