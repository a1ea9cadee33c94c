// One delivery attempt of a notification, as the Standard Webhooks specification has it: a POST
// of the stored body with webhook-id, webhook-timestamp (this attempt's) and webhook-signature
// (v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">, one per secret, space separated). The
// signing is the specification's reference implementation, the `standardwebhooks` package.
// Delivered means a 2xx within the timeout; anything else is a failed attempt with its reason.
//
// Sent with node:http(s) on keep-alive agents, not fetch: an attempt costs a third of fetch's
// CPU (docs/benchmarks.md, "Outcome notifications"), and the pump shares its process with
// fulfilment and, under ROLE=all, with the webhooks; and fetch loads Node's bundled undici, several
// MB of memory (src/stripe/sdk.ts). Neither follows a redirect.
import type { Agent, OutgoingHttpHeaders } from 'node:http';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { Webhook } from 'standardwebhooks';
import { describeError } from '../outcomes.js';
import { quoted } from '../quoted.js';
import { inSpan, spanContextOf, traceparentOf, tracingOn } from '../tracing/trace-context.js';
import { endpointLabel } from './endpoint-label.js';
import { SERVICE_VERSION } from '../version.js';
import { askedRetryAfterMs } from './retry-after.js';

/** Of a response body, only this much is read, and its start quoted in the error: it is the app's, not ours to store. */
const RESPONSE_READ_LIMIT_BYTES = 1024;
// Not `import 'node:http'`: src/stripe/sdk.ts says why.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');
/**
 * An idle kept-alive connection is closed after this long, or a second before the app's own
 * `Keep-Alive: timeout=` if that is sooner (node's agent reads it), so that a burst reuses its
 * connections and a later attempt rarely meets one the app is closing.
 */
const IDLE_CONNECTION_MS = 4_000;

export interface AttemptResult {
  readonly delivered: boolean;
  /** The HTTP status, when an answer came. */
  readonly statusCode: number | null;
  /** Why it did not count as delivered. */
  readonly error: string | null;
  readonly durationMs: number;
  /** How long the app asked to wait before the next attempt (retry-after.ts); null when it did not. */
  readonly retryAfterMs: number | null;
}

/** A notification as one attempt sends it. */
export interface OutgoingNotification {
  id: string;
  body: string;
  /** This attempt's number, from 1. */
  attempt: number;
  /** The outbox write's span, the parent of this attempt's (a W3C traceparent; null while tracing is off). */
  traceContext: string | null;
}

export interface Sender {
  send(endpoint: string, notification: OutgoingNotification): Promise<AttemptResult>;
  /** Closes the kept-alive connections. */
  close(): void;
}

export function createSender({ secrets, timeoutMs }: { secrets: readonly string[]; timeoutMs: number }): Sender {
  // APP_WEBHOOK_SECRET lists several during a rotation: each signs.
  const keys = secrets.map((secret) => new Webhook(secret));
  const sign = (id: string, at: Date, body: string) => keys.map((key) => key.sign(id, at, body)).join(' ');
  const agents = {
    'http:': new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
    'https:': new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  };

  const send = async (endpoint: string, notification: OutgoingNotification, traceparent?: string): Promise<AttemptResult> => {
    const started = performance.now();
    const at = new Date();
    const signal = AbortSignal.timeout(timeoutMs);
    const result = (delivered: boolean, statusCode: number | null, error: string | null, retryAfterMs: number | null = null): AttemptResult => ({
      delivered,
      statusCode,
      error,
      durationMs: Math.round(performance.now() - started),
      retryAfterMs,
    });
    const url = new URL(endpoint);
    try {
      const { status, head, retryAfter } = await post(url, {
        agent: agents[url.protocol === 'https:' ? 'https:' : 'http:'],
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(notification.body)),
          'user-agent': `stripe-inbox/${SERVICE_VERSION}`,
          'webhook-id': notification.id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': sign(notification.id, at, notification.body),
          // The app's own trace continues from this attempt's span (docs/notifications.md).
          ...(traceparent !== undefined && { traceparent }),
        },
        body: notification.body,
        signal,
      });
      if (status >= 200 && status < 300) return result(true, status, null);
      const said = head.trim() === '' ? '' : `: ${quoted(head)}`;
      return result(false, status, `HTTP ${status}${said}`, askedRetryAfterMs(status, retryAfter));
    } catch (error) {
      if (signal.aborted) return result(false, null, `no answer within ${timeoutMs / 1000} s`);
      return result(false, null, describeError(error));
    }
  };

  return {
    send: (endpoint, notification) => (tracingOn() ? tracedSend(endpoint, notification, send) : send(endpoint, notification)),
    close() {
      for (const agent of Object.values(agents)) agent.destroy();
    },
  };
}

/** An attempt inside its CLIENT span, whose context goes out as the `traceparent` header. */
function tracedSend(
  endpoint: string,
  notification: OutgoingNotification,
  send: (endpoint: string, notification: OutgoingNotification, traceparent: string) => Promise<AttemptResult>,
): Promise<AttemptResult> {
  const url = new URL(endpoint);
  // The scheme, host and path only: a query may carry the app's token, a URL its credentials.
  const label = endpointLabel(endpoint);
  const attributes = {
    'http.request.method': 'POST',
    'url.full': label,
    'server.address': url.hostname,
    'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    'stripe_inbox.endpoint': label,
    'stripe_inbox.notification.id': notification.id,
    'stripe_inbox.notification.attempt': notification.attempt,
    ...(notification.attempt > 1 && { 'http.request.resend_count': notification.attempt - 1 }),
  };
  return inSpan(
    'POST',
    { kind: SpanKind.CLIENT, attributes },
    async (span) => {
      const result = await send(endpoint, notification, traceparentOf(span));
      if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
      if (!result.delivered) {
        span.setAttribute('error.type', result.statusCode === null ? 'no_answer' : String(result.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? undefined });
      }
      return result;
    },
    spanContextOf(notification.traceContext),
  );
}

/**
 * POSTs and reads the status, the Retry-After header and up to RESPONSE_READ_LIMIT_BYTES of the answer; the rest is never
 * read. The signal covers the answer's body too: an app that sends its headers and then hangs
 * holds the attempt no longer than one that never answers.
 */
function post(
  url: URL,
  options: { agent: Agent; headers: OutgoingHttpHeaders; body: string; signal: AbortSignal },
): Promise<{ status: number; head: string; retryAfter: string | undefined }> {
  const { body, ...requestOptions } = options;
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, { method: 'POST', ...requestOptions }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answered = () =>
        resolve({
          status: response.statusCode ?? 0,
          head: Buffer.concat(chunks).subarray(0, RESPONSE_READ_LIMIT_BYTES).toString('utf8'),
          retryAfter: response.headers['retry-after'],
        });
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.byteLength;
        if (size >= RESPONSE_READ_LIMIT_BYTES) {
          answered();
          response.destroy();
        }
      });
      response.on('end', answered);
      response.on('error', reject);
      response.on('close', () => {
        if (!response.complete) reject(new Error('the connection closed before the answer ended'));
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}
