-- 0013: an index on what Idempotency-Keys name. Numbering an order's refunds counts the refund
-- keys that name the order (countKeys in src/http/idempotent-request.ts: subject @> ...); without
-- an index that read every key ever taken, on each refund request, and a key is taken for every
-- checkout. jsonb_path_ops: the index serves @> only, which is all the inbox asks of it, and is
-- smaller than the default jsonb_ops. A plain create index, as 0004: writes to the table wait
-- while it builds, reads do not.
create index api_idempotency_keys_subject_idx on api_idempotency_keys using gin (subject jsonb_path_ops);
