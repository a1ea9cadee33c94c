-- 0010: what an inbound Idempotency-Key names is the business module's own JSON (`subject`), no
-- longer an order: subscriptions need keys too, and the inbox must not know what an order is.
-- Operations are the modules' names, so their list is no longer fixed here.
--
-- Expand only: order_id, refund_seq and refund_amount stay for the release before, which keeps
-- writing them during a rolling deploy. This release writes `subject` alone and reads those
-- columns for rows that have no subject (src/http/idempotent-request.ts).
alter table api_idempotency_keys add column subject jsonb;
update api_idempotency_keys set subject = jsonb_strip_nulls(jsonb_build_object(
  'orderId', order_id, 'seq', refund_seq, 'amount', refund_amount));
alter table api_idempotency_keys alter column order_id drop not null;
alter table api_idempotency_keys drop constraint api_idempotency_keys_operation_known;
alter table api_idempotency_keys drop constraint api_idempotency_keys_refund_has_seq;
alter table api_idempotency_keys add constraint api_idempotency_keys_operation_shape
  check (operation ~ '^[a-z][a-z0-9_-]{0,63}$');
alter table api_idempotency_keys add constraint api_idempotency_keys_names_subject
  check (subject is not null or order_id is not null);
