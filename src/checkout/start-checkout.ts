// POST /api/checkout: create the order, then its Stripe Checkout Session.
//
// Two idempotency layers meet here. Inbound, the caller's Idempotency-Key (a double-click, a
// client retry) maps to one order and replays the first response. Outbound, the call to Stripe
// carries `checkout-session:<order_id>`, so any retry for that order creates one session.
// The order is committed before Stripe is called: a session Stripe knows about always names an
// order we know about, and a failed call leaves a pending order that a retry completes.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { Database, OrderRow } from '../db/schema.js';
import { isLockNotAvailable } from '../db/pg-errors.js';
import { attachCheckoutSession, createOrder, findOrder } from '../fulfilment/orders.js';
import { checkoutSessionKey } from '../stripe/idempotency-keys.js';

export interface CheckoutInput {
  package_id: string;
  account_id: string;
  email?: string | undefined;
}

export interface CheckoutDeps {
  db: Kysely<Database>;
  stripe: Stripe;
  successUrl: string;
  cancelUrl: string;
}

export interface HttpResult {
  status: number;
  body: Record<string, unknown>;
}

export async function startCheckout(deps: CheckoutDeps, input: CheckoutInput, idempotencyKey?: string): Promise<HttpResult> {
  if (idempotencyKey === undefined) {
    const order = await createOrder(deps.db, orderInput(input));
    return order ? createSession(deps, deps.db, order) : unknownPackage(input);
  }

  const requestHash = createHash('sha256').update(JSON.stringify([input.package_id, input.account_id, input.email ?? null])).digest('hex');
  const registered = await registerKey(deps.db, idempotencyKey, requestHash, input);
  if (registered === 'unknown_package') return unknownPackage(input);

  try {
    return await deps.db.transaction().execute(async (tx) => {
      // NOWAIT: the row is locked only while another request with this key talks to Stripe.
      // The lock (not a flag) marks "in flight", so a process that dies mid-request frees it.
      const key = await tx
        .selectFrom('api_idempotency_keys')
        .selectAll()
        .where('idempotency_key', '=', idempotencyKey)
        .forUpdate()
        .noWait()
        .executeTakeFirstOrThrow();
      if (key.request_hash !== requestHash) {
        return { status: 422, body: { error: 'Idempotency-Key was already used with a different request body; use a new key' } };
      }
      if (key.response_status !== null) return { status: key.response_status, body: key.response_body as Record<string, unknown> };

      const order = await findOrder(tx, key.order_id);
      if (!order) throw new Error(`order ${key.order_id} of idempotency key vanished`);
      const result = await createSession(deps, tx, order);
      // Only success is kept for replay: after a 502 the same key must reach Stripe again.
      if (result.status === 201) {
        await tx
          .updateTable('api_idempotency_keys')
          .set({ response_status: result.status, response_body: JSON.stringify(result.body) })
          .where('idempotency_key', '=', idempotencyKey)
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

/** Binds a new key to a new order, or leaves an existing key as it is. */
async function registerKey(
  db: Kysely<Database>,
  idempotencyKey: string,
  requestHash: string,
  input: CheckoutInput,
): Promise<'registered' | 'existing' | 'unknown_package'> {
  const existing = await db.selectFrom('api_idempotency_keys').select('idempotency_key').where('idempotency_key', '=', idempotencyKey).executeTakeFirst();
  if (existing) return 'existing';
  try {
    return await db.transaction().execute(async (tx) => {
      const order = await createOrder(tx, orderInput(input));
      if (!order) return 'unknown_package';
      const inserted = await tx
        .insertInto('api_idempotency_keys')
        .values({ idempotency_key: idempotencyKey, request_hash: requestHash, order_id: order.order_id, response_status: null, response_body: null })
        .onConflict((oc) => oc.column('idempotency_key').doNothing())
        .returning('idempotency_key')
        .executeTakeFirst();
      // Another request registered the key between our check and insert: drop our order.
      if (!inserted) throw new KeyTaken();
      return 'registered';
    });
  } catch (error) {
    if (error instanceof KeyTaken) return 'existing';
    throw error;
  }
}

class KeyTaken extends Error {}

async function createSession(deps: CheckoutDeps, db: Kysely<Database>, order: OrderRow): Promise<HttpResult> {
  const pkg = await db.selectFrom('packages').select('name').where('package_id', '=', order.package_id).executeTakeFirstOrThrow();
  let session: Stripe.Checkout.Session;
  try {
    session = await deps.stripe.checkout.sessions.create(
      {
        mode: 'payment',
        // Inline price_data: no catalogue set-up in Stripe, and the price is the order's snapshot.
        line_items: [{ quantity: 1, price_data: { currency: order.currency, unit_amount: order.amount, product_data: { name: pkg.name } } }],
        metadata: { order_id: order.order_id },
        payment_intent_data: { metadata: { order_id: order.order_id } },
        client_reference_id: order.order_id,
        ...(order.email && { customer_email: order.email }),
        success_url: deps.successUrl,
        cancel_url: deps.cancelUrl,
      },
      { idempotencyKey: checkoutSessionKey(order.order_id) },
    );
  } catch (error) {
    const reason = error instanceof Error && 'type' in error ? String((error as { type: unknown }).type) : 'network error';
    return {
      status: 502,
      body: { error: `Stripe could not create the checkout session (${reason}); retry with the same Idempotency-Key`, order_id: order.order_id },
    };
  }
  await attachCheckoutSession(db, order.order_id, session.id);
  return { status: 201, body: { order_id: order.order_id, checkout_session_id: session.id, url: session.url } };
}

const orderInput = (input: CheckoutInput) => ({ packageId: input.package_id, accountId: input.account_id, email: input.email ?? null });

const unknownPackage = (input: CheckoutInput): HttpResult => ({
  status: 400,
  body: { error: `unknown package_id "${input.package_id}"; GET /api/packages lists them` },
});
