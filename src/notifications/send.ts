// One delivery attempt of a notification, as the Standard Webhooks specification has it: a POST
// of the stored body with webhook-id, webhook-timestamp (this attempt's) and webhook-signature
// (v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">, one per secret, space separated). The
// signing is the specification's reference implementation, the `standardwebhooks` package.
// Delivered means a 2xx within the timeout; anything else is a failed attempt with its reason.
import { Webhook } from 'standardwebhooks';
import { describeError } from '../error-chain.js';
import { quoted } from '../quoted.js';
import { SERVICE_VERSION } from '../version.js';

/** Of a response body, only this much is read, and its start quoted in the error: it is the app's, not ours to store. */
const RESPONSE_READ_LIMIT_BYTES = 1024;

export interface AttemptResult {
  readonly delivered: boolean;
  /** The HTTP status, when an answer came. */
  readonly statusCode: number | null;
  /** Why it did not count as delivered. */
  readonly error: string | null;
  readonly durationMs: number;
}

export type Signer = (id: string, at: Date, body: string) => string;

/** Signs with each secret (APP_WEBHOOK_SECRET lists several during a rotation). */
export function createSigner(secrets: readonly string[]): Signer {
  const keys = secrets.map((secret) => new Webhook(secret));
  return (id, at, body) => keys.map((key) => key.sign(id, at, body)).join(' ');
}

export async function sendNotification(
  endpoint: string,
  notification: { id: string; body: string },
  options: { sign: Signer; timeoutMs: number },
): Promise<AttemptResult> {
  const started = performance.now();
  const at = new Date();
  const signal = AbortSignal.timeout(options.timeoutMs);
  const result = (delivered: boolean, statusCode: number | null, error: string | null): AttemptResult => ({
    delivered,
    statusCode,
    error,
    durationMs: Math.round(performance.now() - started),
  });
  try {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': `stripe-inbox/${SERVICE_VERSION}`,
        'webhook-id': notification.id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': options.sign(notification.id, at, notification.body),
      },
      body: notification.body,
      // A redirect is not a delivery: the app must name the URL that takes it.
      redirect: 'manual',
      signal,
    });
    // The timeout covers the answer's body too: an app that sends its headers and then hangs
    // holds this attempt no longer than one that never answers.
    const head = await readHead(response, RESPONSE_READ_LIMIT_BYTES);
    if (response.status >= 200 && response.status < 300) return result(true, response.status, null);
    const said = head.trim() === '' ? '' : `: ${quoted(head)}`;
    return result(false, response.status, `HTTP ${response.status}${said}`);
  } catch (error) {
    if (signal.aborted) return result(false, null, `no answer within ${options.timeoutMs / 1000} s`);
    return result(false, null, describeError(error));
  }
}

/** Up to `limit` bytes of the body as text; the rest is never read. */
async function readHead(response: Response, limit: number): Promise<string> {
  if (!response.body) return '';
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => {});
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
