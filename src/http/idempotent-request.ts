// The caller's Idempotency-Key on POST /api/checkout and POST /admin/api/orders/:id/refund,
// honoured like Stripe honours ours: the same key and body replay the first successful response;
// the same key with another body is a 422; the same key while the first request is still running
// is a 409. What the key names (a new order, the next refund of an order) is created once, in the
// transaction that registers the key, so every retry works on the same thing and sends Stripe
// the same outbound key.
import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { isLockNotAvailable } from '../db/pg-errors.js';
import type { Database } from '../db/schema.js';

export interface HttpResult {
  status: number;
  body: Record<string, unknown>;
}

export type Operation = 'checkout' | 'refund';

export interface KeySubject {
  orderId: string;
  refund?: { seq: number; amount: number };
}

export interface IdempotentRequest {
  key: string;
  operation: Operation;
  /** Everything that identifies the request; hashed and compared on reuse. */
  request: unknown;
  /** Creates what a new key names, or refuses with a result (nothing is registered then). */
  register: (tx: Transaction<Database>) => Promise<KeySubject | HttpResult>;
  /** Runs while this request holds the key; a 2xx result is kept for replays. */
  execute: (tx: Transaction<Database>, subject: KeySubject) => Promise<HttpResult>;
}

export const requestHash = (request: unknown) => createHash('sha256').update(JSON.stringify(request)).digest('hex');

export async function runIdempotent(db: Kysely<Database>, request: IdempotentRequest): Promise<HttpResult> {
  const hash = requestHash(request.request);
  const refused = await registerKey(db, request, hash);
  if (refused) return refused;
  try {
    return await db.transaction().execute(async (tx) => {
      // NOWAIT: the row is locked only while another request with this key is running. The lock,
      // not a flag, marks "in flight", so a process that dies mid-request frees the key.
      const row = await tx
        .selectFrom('api_idempotency_keys')
        .selectAll()
        .where('idempotency_key', '=', request.key)
        .forUpdate()
        .noWait()
        .executeTakeFirstOrThrow();
      if (row.operation !== request.operation || row.request_hash !== hash) {
        return { status: 422, body: { error: 'Idempotency-Key was already used with a different request; use a new key' } };
      }
      if (row.response_status !== null) return { status: row.response_status, body: row.response_body as Record<string, unknown> };
      const refund = row.refund_seq !== null && row.refund_amount !== null ? { seq: row.refund_seq, amount: row.refund_amount } : undefined;
      const result = await request.execute(tx, { orderId: row.order_id, ...(refund && { refund }) });
      // Only success is kept: after a 502 the same key must reach Stripe again.
      if (result.status >= 200 && result.status < 300) {
        await tx
          .updateTable('api_idempotency_keys')
          .set({ response_status: result.status, response_body: JSON.stringify(result.body) })
          .where('idempotency_key', '=', request.key)
          .execute();
      }
      return result;
    });
  } catch (error) {
    if (isLockNotAvailable(error)) {
      return { status: 409, body: { error: 'a request with this Idempotency-Key is still in progress; retry shortly' } };
    }
    throw error;
  }
}

class KeyTaken extends Error {}

/** Binds a new key to a new subject; leaves an existing key alone. Returns a refusal, if any. */
async function registerKey(db: Kysely<Database>, request: IdempotentRequest, hash: string): Promise<HttpResult | undefined> {
  const existing = await db.selectFrom('api_idempotency_keys').select('idempotency_key').where('idempotency_key', '=', request.key).executeTakeFirst();
  if (existing) return undefined;
  try {
    return await db.transaction().execute(async (tx) => {
      const subject = await request.register(tx);
      if ('status' in subject) return subject;
      const inserted = await tx
        .insertInto('api_idempotency_keys')
        .values({
          idempotency_key: request.key,
          operation: request.operation,
          request_hash: hash,
          order_id: subject.orderId,
          refund_seq: subject.refund?.seq ?? null,
          refund_amount: subject.refund?.amount ?? null,
          response_status: null,
          response_body: null,
        })
        .onConflict((oc) => oc.column('idempotency_key').doNothing())
        .returning('idempotency_key')
        .executeTakeFirst();
      // Another request registered the key between our check and insert: undo our subject.
      if (!inserted) throw new KeyTaken();
      return undefined;
    });
  } catch (error) {
    if (error instanceof KeyTaken) return undefined;
    throw error;
  }
}
