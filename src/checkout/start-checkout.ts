// POST /api/checkout: create the order, then its Stripe Checkout Session.
//
// Two idempotency layers meet here. Inbound, the caller's Idempotency-Key (a double-click, a
// client retry) maps to one order and replays the first response (src/http/idempotent-request.ts).
// Outbound, the call to Stripe carries `checkout-session:<order_id>`, so any retry for that order
// creates one session. The order is committed before Stripe is called: a session Stripe knows
// about always names an order we know about, and a failed call leaves a pending order that a
// retry completes. No transaction is open during the call.
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { Database, OrderRow } from '../db/schema.js';
import { attachCheckoutSession, createOrder, findOrder } from '../fulfilment/orders.js';
import { runIdempotent, STRIPE_BUSY, type HttpResult } from '../http/idempotent-request.js';
import { checkoutSessionKey } from '../stripe/idempotency-keys.js';
import { describeStripeFailure, StripeBusy, type StripeCalls } from '../stripe/outbound.js';

export interface CheckoutInput {
  package_id: string;
  account_id: string;
  email?: string | undefined;
}

export interface CheckoutDeps {
  db: Kysely<Database>;
  stripeCalls: StripeCalls;
  successUrl: string;
  cancelUrl: string;
  /** How long an inbound Idempotency-Key is leased to the request using it. */
  idempotencyLeaseMs: number;
}

export async function startCheckout(deps: CheckoutDeps, input: CheckoutInput, idempotencyKey?: string): Promise<HttpResult> {
  if (idempotencyKey === undefined) {
    const order = await createOrder(deps.db, orderInput(input));
    return order ? createSession(deps, order) : unknownPackage(input);
  }
  return runIdempotent(deps.db, {
    key: idempotencyKey,
    operation: 'checkout',
    request: [input.package_id, input.account_id, input.email ?? null],
    leaseMs: deps.idempotencyLeaseMs,
    async register(tx) {
      const order = await createOrder(tx, orderInput(input));
      return order ? { orderId: order.order_id } : unknownPackage(input);
    },
    async execute({ orderId }) {
      const order = await findOrder(deps.db, orderId);
      if (!order) throw new Error(`order ${orderId} of an idempotency key vanished`);
      return createSession(deps, order);
    },
  });
}

async function createSession(deps: CheckoutDeps, order: OrderRow): Promise<HttpResult> {
  const pkg = await deps.db.selectFrom('packages').select('name').where('package_id', '=', order.package_id).executeTakeFirstOrThrow();
  let session: Stripe.Checkout.Session;
  try {
    session = await deps.stripeCalls.run('checkout_session_create', (stripe) =>
      stripe.checkout.sessions.create(
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
      ),
    );
  } catch (error) {
    if (error instanceof StripeBusy) return { ...STRIPE_BUSY, body: { ...STRIPE_BUSY.body, order_id: order.order_id } };
    return {
      status: 502,
      body: { error: `Stripe could not create the checkout session (${describeStripeFailure(error)}); retry with the same Idempotency-Key`, order_id: order.order_id },
    };
  }
  await attachCheckoutSession(deps.db, order.order_id, session.id);
  return { status: 201, body: { order_id: order.order_id, checkout_session_id: session.id, url: session.url } };
}

const orderInput = (input: CheckoutInput) => ({ packageId: input.package_id, accountId: input.account_id, email: input.email ?? null });

const unknownPackage = (input: CheckoutInput): HttpResult => ({
  status: 400,
  body: { error: `unknown package_id "${input.package_id}"; GET /api/packages lists them` },
});
