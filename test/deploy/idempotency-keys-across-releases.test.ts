// Inbound Idempotency-Keys during a rolling deploy from the release before sql/0010, which stored
// what a key names in order_id, refund_seq and refund_amount: this release resumes a key that
// release registered, numbers an order's refunds after that release's, and writes its own keys so
// that release can read them (the trigger of sql/0010).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { requestHash } from '../../src/http/idempotent-request.js';
import { givenOrder, newAccountId, paidOrder } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile();

/** The row the release before wrote when it registered a key: no subject, the old columns. */
async function keyOfPreviousRelease(
  key: string,
  row: { operation: string; request: unknown; orderId: string; refund?: { seq: number; amount: number }; response?: { status: number; body: unknown } },
) {
  await sql`
    insert into api_idempotency_keys (idempotency_key, operation, request_hash, order_id, refund_seq, refund_amount, response_status, response_body)
    values (${`${row.operation}:${key}`}, ${row.operation}, ${requestHash(row.request)}, ${row.orderId}, ${row.refund?.seq ?? null}, ${row.refund?.amount ?? null},
            ${row.response?.status ?? null}, ${row.response ? JSON.stringify(row.response.body) : null}::jsonb)`.execute(file.database.db);
}

test("a checkout key the release before registered (its request died before Stripe answered) is completed for that key's order", async () => {
  const accountId = newAccountId();
  const order = await givenOrder(file.database, { accountId });
  await keyOfPreviousRelease('old-checkout', { operation: 'checkout', request: ['starter', accountId, null], orderId: order.order_id });

  const reply = await file.service.call('POST', '/api/checkout', {
    body: { package_id: 'starter', account_id: accountId },
    headers: { 'idempotency-key': 'old-checkout' },
  });
  assert.equal(reply.status, 201);
  assert.equal(reply.body.order_id, order.order_id);
  const creates = file.service.stripe.requests.filter((r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === order.order_id);
  assert.deepEqual(
    creates.map((r) => r.idempotencyKey),
    [`checkout-session:${order.order_id}`],
  );
});

test("refunds are numbered after the release before's, and this release's keys carry the columns that release reads", async () => {
  const order = await paidOrder(file.database, file.service);
  await keyOfPreviousRelease('old-refund', {
    operation: 'refund',
    request: [order.order_id, 1000],
    orderId: order.order_id,
    refund: { seq: 1, amount: 1000 },
    response: { status: 201, body: { order_id: order.order_id, refund_id: 're_old', amount: 1000, status: 'succeeded' } },
  });

  const reply = await file.service.call('POST', `/admin/api/orders/${order.order_id}/refund`, {
    body: { amount: 500 },
    headers: { 'idempotency-key': 'new-refund' },
  });
  assert.equal(reply.status, 201);
  const sent = file.service.stripe.requests.filter((r) => r.path === '/v1/refunds' && r.params.payment_intent === order.payment_intent_id);
  assert.deepEqual(
    sent.map((r) => r.idempotencyKey),
    [`refund:${order.order_id}:2`],
  );

  const { rows } = await sql<{ order_id: string | null; refund_seq: number | null; refund_amount: number | null }>`
    select order_id, refund_seq, refund_amount from api_idempotency_keys where idempotency_key = 'refund:new-refund'`.execute(file.database.db);
  assert.deepEqual(rows, [{ order_id: order.order_id, refund_seq: 2, refund_amount: 500 }]);
});
