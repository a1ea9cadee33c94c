-- 0019: each account's count of outcome notifications, the `sequence` they carry (docs/notifications.md).
-- Kept on the balance's row because the outcomes that notify already lock it, so numbering them
-- costs no lock of its own and follows the order in which the balance changed. A constant default:
-- no table rewrite.
alter table account_credits add column notified int not null default 0;
