// POST /webhooks/stripe. Verify, claim, answer. Nothing slow happens here: the 2xx goes out as
// soon as the event row and its job are committed (docs/design.md, invariant 1), and the worker
// does the rest. Every answer is one of a fixed set; Stripe retries anything that is not 2xx.
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { RequestHandler } from 'express';
import type { ClaimOutcome, IncomingEvent } from '../events/event-store.js';
import { isDatabaseUnavailable, isPoolBusy } from '../db/pg-errors.js';
import type { Logger } from '../logger.js';
import type { Metrics, WebhookOutcome } from '../metrics/metrics.js';
import { parseWebhook, WebhookRejectedError } from '../stripe/webhook-event.js';
import { BUSY_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE, POOL_BUSY, UNAVAILABLE_RETRY_AFTER_SECONDS } from './error-handler.js';
import { BodyBudget } from './body-budget.js';
import { proveConnection } from './connection-keep-alive.js';
import { clientKey } from './rate-limits.js';
import { readRawBody } from './read-raw-body.js';
import { startSpan, traceparentOf, tracingOn } from '../tracing/trace-context.js';

/** 1 MiB. Stripe's events are a few KB; the limit bounds the memory one request can take. */
const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * How long a body may take to arrive after its headers. Stripe sends a few KB at once; a body
 * still arriving after this is a client holding its share of the budget, and the request timeout
 * (HTTP_REQUEST_TIMEOUT_SECONDS, 30 s) would let it hold that six times as long.
 */
const WEBHOOK_BODY_DEADLINE_MS = 5_000;

export interface WebhookDeps {
  webhookSecrets: readonly string[];
  /** WEBHOOK_BODY_BUDGET_MB: bytes of unverified bodies held at once, across all requests (one client an eighth of it). */
  webhookBodyBudgetBytes: number;
  /** Durably claims the event and enqueues its job; resolves only after commit. */
  claim: (event: IncomingEvent) => Promise<ClaimOutcome>;
  logger: Logger;
  metrics: Metrics;
}

function rejectionOutcome(status: number, error: string): WebhookOutcome {
  if (status === 413) return 'too_large';
  // An incomplete request: the body never came whole.
  if (status === 408) return 'malformed';
  if (status === 503) return 'busy';
  return error.includes('Stripe-Signature') ? 'bad_signature' : 'malformed';
}

const WEBHOOK_SPAN_ATTRIBUTES = { 'http.request.method': 'POST', 'http.route': '/webhooks/stripe' };

/** As the HTTP conventions have it for a server: a 5xx is an error, a 4xx is the client's. */
function endServerSpan(span: Span, statusCode: number): void {
  span.setAttribute('http.response.status_code', statusCode);
  if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

// The answers to a stored delivery, serialised once: the route answers thousands a second.
const ACCEPTED = JSON.stringify({ received: true });
const DUPLICATE = JSON.stringify({ received: true, duplicate: true });

/**
 * The handler for POST /webhooks/stripe. `limitRejections` sees rejected deliveries only (see
 * rate-limits.ts): it calls next, or answers 429.
 */
export function webhookHandler(
  { webhookSecrets, webhookBodyBudgetBytes, claim, logger, metrics }: WebhookDeps,
  limitRejections: RequestHandler,
): RequestHandler {
  const budget = new BodyBudget(webhookBodyBudgetBytes, { bodyLimitBytes: WEBHOOK_BODY_LIMIT_BYTES });
  return async (req, res, next) => {
    const started = performance.now();
    const span = tracingOn() ? startSpan('POST /webhooks/stripe', { kind: SpanKind.SERVER, attributes: WEBHOOK_SPAN_ATTRIBUTES }) : undefined;
    // 'close' rather than 'finish': a request the client gave up on ends its span too.
    if (span) res.once('close', () => endServerSpan(span, res.statusCode));
    // A client over its limit gets a quiet 429 instead, so a flood cannot flood the log either.
    // Every refusal counts, those of a slow body or of the body budget too: they are what a
    // client holding unverified bodies is answered.
    const reject = (status: number, error: string) => {
      res.once('finish', () => metrics.webhookRequests.inc({ outcome: res.statusCode === 429 ? 'rate_limited' : rejectionOutcome(status, error) }));
      void limitRejections(req, res, (failure?: unknown) => {
        if (failure) return next(failure);
        logger.warn({ outcome: 'rejected', status, reason: error }, 'webhook rejected');
        res.status(status).json({ error });
      });
    };
    // Raw body on this route only: the signature covers the exact bytes.
    const read = await readRawBody(req, res, { limitBytes: WEBHOOK_BODY_LIMIT_BYTES, deadlineMs: WEBHOOK_BODY_DEADLINE_MS, budget, client: clientKey(req) });
    if (read.kind === 'aborted') return;
    if (read.kind === 'rejected') return reject(read.status, read.error);

    let event: IncomingEvent;
    try {
      event = parseWebhook(read.body, req.headers['stripe-signature'], webhookSecrets);
      // Signed with our secret: Stripe, whose connection may idle as long as keep-alive allows.
      proveConnection(req);
    } catch (error) {
      if (!(error instanceof WebhookRejectedError)) throw error;
      return reject(400, error.message);
    } finally {
      // Verified or refused: either way no longer an unverified body. A verified one is a few KB.
      read.release();
    }
    const log = { eventId: event.eventId, type: event.type };
    span?.setAttributes({ 'stripe.event.id': event.eventId, 'stripe.event.type': event.type });
    let outcome: ClaimOutcome;
    try {
      // The claim stores the span's context with the event: its fulfilment links back to it.
      outcome = await claim(span ? { ...event, traceparent: traceparentOf(span) } : event);
    } catch (error) {
      // Whatever went wrong, nothing was committed: 503 makes Stripe deliver again.
      if (isPoolBusy(error)) {
        logger.warn({ ...log, outcome: 'busy', err: error }, 'no free intake connection in time, Stripe will retry');
        metrics.webhookRequests.inc({ outcome: 'busy' });
        return void res.status(503).set('Retry-After', String(BUSY_RETRY_AFTER_SECONDS)).json(POOL_BUSY);
      }
      if (!isDatabaseUnavailable(error)) logger.error({ ...log, err: error }, 'claiming webhook event failed');
      else logger.warn({ ...log, outcome: 'unavailable' }, 'database unavailable, Stripe will retry');
      metrics.webhookRequests.inc({ outcome: 'unavailable' });
      return void res.status(503).set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS)).json(DATABASE_UNAVAILABLE);
    }
    metrics.webhookRequests.inc({ outcome: outcome === 'claimed' ? 'accepted' : 'duplicate' });
    span?.setAttribute('stripe_inbox.claim.outcome', outcome);
    logger.info({ ...log, outcome, durationMs: Math.round(performance.now() - started) }, 'webhook');
    // Written directly rather than with res.json, which would serialise the answer and hash it
    // into an ETag, on every delivery, for a client that never revalidates.
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(outcome === 'duplicate' ? DUPLICATE : ACCEPTED);
  };
}
