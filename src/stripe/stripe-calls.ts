// Every outbound Stripe API call of a request goes through here: at most `maxConcurrent` at once,
// each timed. When Stripe is slow, calls pile up; past the bound a request is refused at once
// (503 with Retry-After) instead of waiting behind the others, so a Stripe incident costs
// checkouts, never memory, sockets or the webhook path.
import { SpanKind, trace } from '@opentelemetry/api';
import { Stripe } from './sdk.js';
import { inSpan, tracingOn } from '../tracing/trace-context.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';

/** Names the call in metrics and logs, snake case: 'checkout_session_create'. */
export type StripeOperation = string;

/** A call that did not go through: no slot was free (nothing was sent), or Stripe failed (`reason`: its error type). */
export type StripeCallFailure = { outcome: 'stripe_busy' } | { outcome: 'stripe_failed'; reason: string };

/** Too many Stripe calls in flight in this process. */
class StripeBusyError extends Error {
  constructor(readonly maxConcurrent: number) {
    super(`${maxConcurrent} Stripe calls are already in flight`);
  }
}

/**
 * A call that ran out of time. Also when the SDK's retry of a timed-out attempt was refused with
 * 409 (Stripe was still working on the first attempt, under the same Idempotency-Key): the cause
 * is then Stripe's 409, the reason is still a slow Stripe.
 */
class StripeTimeoutError extends Error {
  constructor(operation: StripeOperation, options: { cause: unknown }) {
    super(`Stripe did not answer ${operation} in time`, options);
  }
}

export interface StripeCallsOptions {
  maxConcurrent: number;
  /** Per attempt (STRIPE_TIMEOUT_SECONDS): a failed call that took at least this long was slow, whatever its last error. */
  timeoutMs: number;
  metrics: Pick<Metrics, 'stripeRequestSeconds' | 'stripeCallsRefused'>;
  logger: Logger;
}

export class StripeCalls {
  #inFlight = 0;

  constructor(
    readonly stripe: Stripe,
    private readonly options: StripeCallsOptions,
  ) {
    if (tracingOn()) describeRequestsInSpans(stripe);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * For a request: the call's result, or why it did not go through as an outcome the caller
   * answers with (no slot free, or Stripe failed), never an exception.
   */
  async attempt<T>(operation: StripeOperation, call: (stripe: Stripe) => Promise<T>): Promise<{ outcome: 'done'; value: T } | StripeCallFailure> {
    try {
      return { outcome: 'done', value: await this.run(operation, call) };
    } catch (error) {
      if (error instanceof StripeBusyError) return { outcome: 'stripe_busy' };
      return { outcome: 'stripe_failed', reason: describeStripeFailure(error) };
    }
  }

  async run<T>(operation: StripeOperation, call: (stripe: Stripe) => Promise<T>): Promise<T> {
    if (this.#inFlight >= this.options.maxConcurrent) {
      this.options.metrics.stripeCallsRefused.inc({ operation });
      this.options.logger.warn(
        { operation, inFlight: this.#inFlight },
        'Stripe calls at their bound (STRIPE_MAX_CONCURRENT_CALLS): refused, the caller may retry',
      );
      throw new StripeBusyError(this.options.maxConcurrent);
    }
    this.#inFlight++;
    const started = performance.now();
    let outcome = 'ok';
    try {
      if (!tracingOn()) return await call(this.stripe);
      return await inSpan(`stripe ${operation}`, { kind: SpanKind.CLIENT, attributes: { 'stripe_inbox.stripe.operation': operation } }, () =>
        call(this.stripe),
      );
    } catch (error) {
      const durationMs = performance.now() - started;
      const timedOut = isStripeTimeout(error) || durationMs >= this.options.timeoutMs;
      outcome = timedOut ? 'timeout' : 'error';
      this.options.logger.warn({ operation, outcome, lastError: describeStripeFailure(error), durationMs: Math.round(durationMs) }, 'Stripe call failed');
      throw timedOut ? new StripeTimeoutError(operation, { cause: error }) : error;
    } finally {
      this.#inFlight--;
      this.options.metrics.stripeRequestSeconds.observe({ operation, outcome }, (performance.now() - started) / 1000);
    }
  }
}

/** True for a call refused before anything was sent: no slot was free (run()'s throw). */
export const isStripeBusy = (error: unknown): boolean => error instanceof StripeBusyError;

/** The SDK reports its own timeout as a connection error naming the timeout. */
function isStripeTimeout(error: unknown): boolean {
  return error instanceof Stripe.errors.StripeConnectionError && /timeout/i.test(error.message);
}

/** A short, safe reason for a failed Stripe call: its error type, never its raw message. */
function describeStripeFailure(error: unknown): string {
  if (error instanceof StripeTimeoutError || isStripeTimeout(error)) return 'timeout';
  return error instanceof Stripe.errors.StripeError ? error.type : 'network error';
}

/**
 * The SDK tells of each HTTP request it sends (a retry too) and of each answer, synchronously in
 * the caller's context: the active span is the call's, from run(). Method, path and status are
 * only known there; the request's body and the key itself never reach a span.
 */
function describeRequestsInSpans(stripe: Stripe): void {
  // The SDK's types leave `on` untyped; these are the fields of its RequestEvent and ResponseEvent read here.
  const sdk = stripe as unknown as SdkEvents;
  sdk.on('request', (request) => {
    trace.getActiveSpan()?.setAttributes({
      'http.request.method': request.method,
      'url.path': request.path,
      'stripe_inbox.stripe.idempotency_key_present': request.idempotency_key !== undefined,
    });
  });
  sdk.on('response', (response) => {
    trace.getActiveSpan()?.setAttribute('http.response.status_code', response.status);
  });
}

interface SdkEvents {
  on(event: 'request', listener: (request: { method: string; path: string; idempotency_key?: string }) => void): void;
  on(event: 'response', listener: (response: { status: number }) => void): void;
}
