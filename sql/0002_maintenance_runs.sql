-- 0002: when each maintenance job (the sweep, later the pruner) last ran and what it did, so
-- status can tell "the sweep is running" from "nothing needed sweeping".
create table maintenance_runs (
  name        text primary key,
  last_run_at timestamptz not null,
  last_result jsonb not null
);
