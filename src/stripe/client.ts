// The Stripe SDK client. STRIPE_API_BASE points it at another server (stripe-mock, the offline
// stand-in, the tests' fake); its own retries reuse the Idempotency-Key we pass.
import Stripe from 'stripe';

export function createStripeClient(secretKey: string, apiBase: string | undefined): Stripe {
  const base = apiBase ? new URL(apiBase) : undefined;
  return new Stripe(secretKey, {
    maxNetworkRetries: 2,
    // Checkout waits on this call while holding its idempotency row: keep it well under the
    // database's idle-in-transaction timeout (60 s) including retries.
    timeout: 10_000,
    appInfo: { name: 'stripe-inbox' },
    ...(base && {
      host: base.hostname,
      port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
      protocol: base.protocol === 'https:' ? 'https' : 'http',
    }),
  });
}

/** A short, safe reason for a failed Stripe call: its error type, never its raw message. */
export function describeStripeFailure(error: unknown): string {
  return error instanceof Stripe.errors.StripeError ? error.type : 'network error';
}
