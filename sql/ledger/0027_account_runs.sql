-- 0027: each use of an account's credits (POST /api/accounts/:id/runs) as a row of its own, so an
-- app can list its runs and reverse one, once. The row and the balance it moved are written by
-- one statement (src/modules/ledger/runs.ts). Business records: prune never deletes them, though
-- the Idempotency-Keys that made them are pruned with the events.
--
-- A new table only: the release before keeps consuming through account_credits alone while both
-- run; its runs have no row, so they are not listed and cannot be reversed.
create table account_runs (
  run_id      text primary key,
  -- A run only ever uses an existing balance, so every run has one.
  account_id  text not null references account_credits,
  -- Credits used; a reversal gives back exactly these.
  quantity    integer not null,
  created_at  timestamptz not null default now(),
  -- Set once, by the reversal that gave the credits back.
  reversed_at timestamptz,
  constraint account_runs_quantity_positive check (quantity > 0)
);
-- GET /api/accounts/:id/runs: an account's runs newest first, paged by (created_at, run_id).
create index account_runs_account_created_idx on account_runs (account_id, created_at, run_id);
