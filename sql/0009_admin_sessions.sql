-- 0009: dashboard sessions kept in Postgres, so that signing out ends a session at once; a signed
-- cookie alone stays valid until it expires. The previous release never reads this table (its
-- cookies are signed, and each release refuses the other's: the operator signs in again).
create table admin_sessions (
  -- HMAC-SHA256 of the cookie's random id, keyed by ADMIN_TOKEN: whoever reads this table cannot
  -- make a cookie from it, and rotating ADMIN_TOKEN ends every session.
  session_digest text primary key,
  created_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  revoked_at     timestamptz,
  constraint admin_sessions_expire_after_start check (expires_at > created_at),
  constraint admin_sessions_revoked_after_start check (revoked_at >= created_at)
);
-- No index on expires_at: rows past it are deleted when a session starts, and one operator signing
-- in a few times a day leaves a handful of rows.
