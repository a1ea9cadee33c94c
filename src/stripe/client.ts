// The Stripe SDK client. STRIPE_API_BASE points it at another server (stripe-mock, the offline
// stand-in, the tests' fake); its own retries reuse the Idempotency-Key we pass.
import { DeadlineHttpClient } from './deadline-http-client.js';
import { Stripe } from './sdk.js';

/**
 * One retry: the SDK retries network errors, 409 (a concurrent request with our key) and 5xx,
 * after about half a second. More would keep a buyer waiting on a checkout that a page reload
 * (same Idempotency-Key) retries anyway.
 */
const STRIPE_NETWORK_RETRIES = 1;

export interface StripeClientOptions {
  /**
   * Per attempt (STRIPE_TIMEOUT_SECONDS), a deadline for the whole answer (deadline-http-client.ts):
   * the longest a call can take is twice this plus the SDK's half-second wait between attempts.
   */
  timeoutMs: number;
}

export function createStripeClient(secretKey: string, apiBase: string | undefined, { timeoutMs }: StripeClientOptions): Stripe {
  const base = apiBase ? new URL(apiBase) : undefined;
  return new Stripe(secretKey, {
    maxNetworkRetries: STRIPE_NETWORK_RETRIES,
    timeout: timeoutMs,
    httpClient: new DeadlineHttpClient(),
    appInfo: { name: 'stripe-inbox' },
    ...(base && {
      host: base.hostname,
      port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
      protocol: base.protocol === 'https:' ? 'https' : 'http',
    }),
  });
}

/**
 * The longest one outbound call can take, retries and the wait between them included, plus a
 * margin for our own work around it: how long an inbound
 * Idempotency-Key stays leased to the request making it (src/http/idempotent-request.ts).
 */
export function longestCallMs({ timeoutMs }: StripeClientOptions): number {
  return timeoutMs * (STRIPE_NETWORK_RETRIES + 1) + 5_000;
}
