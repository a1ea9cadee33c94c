// Turns a webhook delivery (raw body + Stripe-Signature) into an IncomingEvent, or rejects it
// with a fixed message. Nothing from the request is echoed back and nothing is stored for a
// rejected delivery. The raw body is verified and stored as sent: Stripe signs bytes, not JSON.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { IncomingEvent } from '../events/event-store.js';
import { apiPathOf, isV1ThinType, MAX_API_URL_LENGTH } from './thin-events.js';
import { unstorableJson } from './unstorable-json.js';

/** Stripe's default: a signature older (or newer) than five minutes is a possible replay. */
const SIGNATURE_TOLERANCE_SECONDS = 300;

export class WebhookRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookRejectedError';
  }
}

/** Ids are indexed (a btree entry holds at most ~2.7 KB); Stripe's are a few dozen characters. */
const MAX_ID_LENGTH = 255;

/** 9999-12-31T23:59:59Z: `created` is Unix seconds, and a Date (or a timestamptz) past this is not a time. */
const MAX_CREATED = 253_402_300_799;

// Odd but valid ids and types are accepted; what is bounded is what we store and index.
const printable = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[\x21-\x7e]+$/);

const eventShape = z.object({
  id: printable(MAX_ID_LENGTH),
  object: z.literal('event'),
  type: printable(MAX_ID_LENGTH),
  created: z.number().int().nonnegative().max(MAX_CREATED),
  livemode: z.boolean(),
  // An object; only its id is read here. (A z.record would check, and copy, each of its keys on
  // every delivery, for nothing the inbox stores.)
  data: z.object({ object: z.object({ id: z.unknown().optional() }) }),
});

/**
 * A thin notification (an event destination's thin payload): what happened and to which object,
 * without the object. Fulfilment fetches what the handlers need (src/fulfilment/thin-fetch.ts).
 * A v1 type names its related object (Stripe's `v1.<type>` thin events of v1 resources), or only its
 * snapshot event when the object has no URL of its own.
 */
const thinShape = z
  .object({
    id: printable(MAX_ID_LENGTH),
    object: z.literal('v2.core.event'),
    type: printable(MAX_ID_LENGTH),
    created: z.iso.datetime({ offset: true }).refine((iso) => Date.parse(iso) <= MAX_CREATED * 1000),
    livemode: z.boolean(),
    related_object: z
      .object({
        id: printable(MAX_ID_LENGTH),
        type: printable(MAX_ID_LENGTH),
        // Fetched by the worker with our secret key: a path of Stripe's /v1/ or /v2/ API once
        // resolved, never another path of its host, nor another host.
        url: printable(MAX_API_URL_LENGTH).refine((url) => apiPathOf(url) !== undefined),
      })
      .nullish(),
    snapshot_event: printable(MAX_ID_LENGTH).nullish(),
  })
  // A v1 type names its related object, or (an object without a URL of its own, such as an active
  // entitlement summary) only its snapshot event: fulfilment fetches one of them.
  .refine((thin) => !isV1ThinType(thin.type) || thin.related_object || thin.snapshot_event, { path: ['related_object'] });

export type ThinNotification = z.infer<typeof thinShape>;

const INVALID_SIGNATURE = 'invalid Stripe-Signature: check STRIPE_WEBHOOK_SECRET and the server clock';
const NOT_UTF8_JSON = 'malformed event: body is not UTF-8 JSON';
const utf8 = new TextDecoder('utf-8', { fatal: true });
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

export function parseWebhook(rawBody: Buffer, signatureHeader: unknown, secrets: readonly string[]): IncomingEvent {
  if (typeof signatureHeader !== 'string' || signatureHeader === '') {
    throw new WebhookRejectedError('missing Stripe-Signature header');
  }
  const { timestamp, signatures } = parseSignatureHeader(signatureHeader);
  // A signature older (or newer) than the tolerance is a possible replay: a captured delivery
  // cannot be sent again later, nor signed ahead of time.
  const now = Math.floor(Date.now() / 1000);
  if (!Number.isSafeInteger(timestamp) || Math.abs(now - timestamp) > SIGNATURE_TOLERANCE_SECONDS) {
    throw new WebhookRejectedError(INVALID_SIGNATURE);
  }
  // Every configured secret is tried, so a rotation (old and new secret both live) loses nothing.
  if (!secrets.some((secret) => signedWith(secret, timestamp, rawBody, signatures))) throw new WebhookRejectedError(INVALID_SIGNATURE);

  const text = decodeUtf8(rawBody);
  if (text === undefined) throw new WebhookRejectedError(NOT_UTF8_JSON);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new WebhookRejectedError(NOT_UTF8_JSON);
  }
  const kind = typeof json === 'object' && json !== null ? (json as { object?: unknown }).object : undefined;
  if (kind !== 'event' && kind !== 'v2.core.event') {
    throw new WebhookRejectedError('malformed event: object is missing or invalid (expected "event" or "v2.core.event")');
  }
  const parsed = kind === 'event' ? eventShape.safeParse(json) : thinShape.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new WebhookRejectedError(`malformed event: ${issue?.path.join('.') || 'body'} is missing or invalid`);
  }
  // What Postgres would fail on, storing it or reading it back, must be refused here: a database
  // error on the webhook path is a 5xx, and Stripe retries a 5xx for days although it never passes.
  const unstorable = unstorableJson(text);
  if (unstorable) throw new WebhookRejectedError(`malformed event: ${unstorable}`);
  // The bytes of the text that was parsed: TextDecoder drops a leading byte-order mark, and so
  // must what is stored, or Postgres's JSON input would refuse it.
  const stored = rawBody.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? rawBody.subarray(UTF8_BOM.length) : rawBody;
  if (parsed.data.object === 'v2.core.event') return toIncomingNotification(parsed.data, stored);

  const event = parsed.data;
  // Some types (invoice.upcoming) have an object without an id; an id that is there is indexed.
  const objectId = event.data.object.id;
  if (typeof objectId === 'string' && (objectId.length < 1 || objectId.length > MAX_ID_LENGTH)) {
    throw new WebhookRejectedError('malformed event: data.object.id is missing or invalid');
  }
  return toIncomingEvent(event, stored);
}

/**
 * The header's `t` and its `v1` signatures, as bytes. Stripe's scheme
 * (docs.stripe.com/webhooks#verify-manually): `t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, where a v1
 * is HMAC-SHA256 over `<t>.<raw body>` keyed with the endpoint's secret (two while a secret
 * rolls). Every other scheme (the v0 that test-mode deliveries also carry) is ignored, as Stripe
 * asks, so that a weaker scheme cannot stand in for v1; so is a v1 that is not 64 lowercase hex
 * digits, which matches nothing Stripe computes.
 * With `t` twice the last one counts, as in Stripe's own verifiers.
 */
function parseSignatureHeader(header: string): { timestamp: number; signatures: Buffer[] } {
  let timestamp = Number.NaN;
  const signatures: Buffer[] = [];
  for (const item of header.split(',')) {
    const [key, value = ''] = item.split('=');
    if (key === 't') timestamp = Number.parseInt(value, 10);
    else if (key === 'v1' && HEX_SHA256.test(value)) signatures.push(Buffer.from(value, 'hex'));
  }
  return { timestamp, signatures };
}
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/**
 * Whether one of the signatures is the secret's over these bytes. The raw bytes are what Stripe
 * signed, so they are what is hashed: no decoding first, and nothing hashed twice. Compared in
 * constant time, so the answer's timing tells a forger nothing about how close a guess was.
 */
function signedWith(secret: string, timestamp: number, rawBody: Buffer, signatures: readonly Buffer[]): boolean {
  if (signatures.length === 0) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
  return signatures.some((signature) => timingSafeEqual(signature, expected));
}

/** What the inbox stores of a Stripe Event object; `rawBody` is the event as it was received. */
export function toIncomingEvent(
  event: { id: string; type: string; livemode: boolean; created: number; data: { object: object } },
  rawBody: Buffer,
): IncomingEvent {
  const objectId = (event.data.object as { id?: unknown }).id;
  return {
    eventId: event.id,
    type: event.type,
    objectId: typeof objectId === 'string' ? objectId : null,
    livemode: event.livemode,
    stripeCreatedAt: new Date(event.created * 1000),
    snapshotEventId: event.id,
    rawBody,
  };
}

/** What the inbox stores of a thin notification: its related object's id is the object id searched by. */
export function toIncomingNotification(
  notification: Pick<ThinNotification, 'id' | 'type' | 'livemode' | 'created' | 'related_object' | 'snapshot_event'>,
  rawBody: Buffer,
): IncomingEvent {
  return {
    eventId: notification.id,
    type: notification.type,
    objectId: notification.related_object?.id ?? null,
    livemode: notification.livemode,
    stripeCreatedAt: new Date(notification.created),
    snapshotEventId: notification.snapshot_event ?? null,
    rawBody,
  };
}
