// Paying for an order: its Stripe Checkout Session. The order is committed before Stripe is
// called (routes.ts creates it, with the caller's Idempotency-Key when there is one), so a session
// Stripe knows about always names an order we know about, and a failed call leaves a pending order
// that a retry completes. The call carries `checkout-session:<order_id>`, so every retry for that
// order creates one session, whose id is stored as soon as Stripe answers: only that session pays
// the order (order-payment.ts). No transaction is open during the call.
import type { Kysely } from 'kysely';
import type { StripeCallFailure, StripeCalls, Wake } from '../../business-module.js';
import { checkoutSessionKey } from './idempotency-keys.js';
import { attachCheckoutSession } from './orders.js';
import type { CreditsDatabase, OrderRow } from './tables.js';

export interface CheckoutDeps {
  db: Kysely<CreditsDatabase>;
  stripeCalls: StripeCalls;
  wake: Wake;
  successUrl: string;
  cancelUrl: string;
}

export type CheckoutOutcome = { outcome: 'created'; checkoutSessionId: string; url: string | null } | StripeCallFailure;

export async function openCheckoutSession(deps: CheckoutDeps, order: OrderRow): Promise<CheckoutOutcome> {
  const pkg = await deps.db
    .selectFrom('packages')
    .select(['name', 'stripe_price_id', 'features'])
    .where('package_id', '=', order.package_id)
    .executeTakeFirstOrThrow();
  const call = await deps.stripeCalls.attempt('checkout_session_create', (stripe) =>
    stripe.checkout.sessions.create(
      {
        mode: 'payment',
        // The package's Stripe Price when it names one (checked against the package when it was
        // created, and never changed since); else inline price_data, the order's snapshot.
        line_items: [
          pkg.stripe_price_id === null
            ? { quantity: 1, price_data: { currency: order.currency, unit_amount: order.amount, product_data: { name: pkg.name } } }
            : { quantity: 1, price: pkg.stripe_price_id },
        ],
        metadata: { order_id: order.order_id },
        // Stripe copies the PaymentIntent's metadata to its charge: a refund or dispute of this
        // payment then says it is ours even before the session's event links the PaymentIntent
        // (the ledger's chargeOwnership); the account is for whoever reads it in the Dashboard.
        payment_intent_data: { metadata: { order_id: order.order_id, account_id: order.account_id } },
        client_reference_id: order.order_id,
        // Stripe's rule: in payment mode Checkout makes a Customer only when asked. A package that
        // grants Features needs one (Stripe's entitlements are a customer's), linked to the account
        // when the session is paid; the others' requests stay as they were, so a retry under the
        // same Idempotency-Key across a deploy sends the same parameters.
        ...(pkg.features.length > 0 && { customer_creation: 'always' as const }),
        ...(order.email && { customer_email: order.email }),
        success_url: deps.successUrl,
        cancel_url: deps.cancelUrl,
      },
      { idempotencyKey: checkoutSessionKey(order.order_id) },
    ),
  );
  if (call.outcome !== 'done') return call;
  await attachCheckoutSession(deps.db, order.order_id, call.value.id, deps.wake);
  return { outcome: 'created', checkoutSessionId: call.value.id, url: call.value.url };
}
