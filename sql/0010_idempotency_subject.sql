-- 0010: what an inbound Idempotency-Key names is the business module's own JSON (`subject`), no
-- longer an order: subscriptions need keys too, and the inbox must not know what an order is.
-- Operations are the modules' names, so their list is no longer fixed here.
--
-- Both releases run during a rolling deploy, so the two shapes are kept in step by a trigger,
-- here and not in the code: a row the release before writes (order_id, refund_seq,
-- refund_amount) gets its subject, and a row this release writes for an order gets those columns
-- back, so either release can resume the other's key and both number an order's refunds alike.
-- A later migration drops the trigger and the old columns once no release before 0010 runs.
alter table api_idempotency_keys add column subject jsonb;
update api_idempotency_keys set subject = jsonb_strip_nulls(jsonb_build_object(
  'orderId', order_id, 'seq', refund_seq, 'amount', refund_amount));
alter table api_idempotency_keys alter column subject set not null;
alter table api_idempotency_keys alter column order_id drop not null;
alter table api_idempotency_keys drop constraint api_idempotency_keys_operation_known;
alter table api_idempotency_keys drop constraint api_idempotency_keys_refund_has_seq;
alter table api_idempotency_keys add constraint api_idempotency_keys_operation_shape
  check (operation ~ '^[a-z][a-z0-9_-]{0,63}$');

create function api_idempotency_keys_both_shapes() returns trigger language plpgsql as $$
begin
  if new.subject is null then
    new.subject := jsonb_strip_nulls(jsonb_build_object('orderId', new.order_id, 'seq', new.refund_seq, 'amount', new.refund_amount));
  elsif new.order_id is null and new.subject ? 'orderId' then
    new.order_id := new.subject->>'orderId';
    new.refund_seq := (new.subject->>'seq')::int;
    new.refund_amount := (new.subject->>'amount')::int;
  end if;
  return new;
end $$;

-- Before the NOT NULL check: the release before inserts no subject.
create trigger api_idempotency_keys_both_shapes before insert on api_idempotency_keys
  for each row execute function api_idempotency_keys_both_shapes();
