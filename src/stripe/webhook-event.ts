// Turns a webhook delivery (raw body + Stripe-Signature) into an IncomingEvent, or rejects it
// with a fixed message. Nothing from the request is echoed back and nothing is stored for a
// rejected delivery. The raw body is verified and stored as sent: Stripe signs bytes, not JSON.
import Stripe from 'stripe';
import { z } from 'zod';
import type { IncomingEvent } from '../events/event-store.js';

/** Stripe's default: a signature older (or newer) than five minutes is a possible replay. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export class WebhookRejection extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookRejection';
  }
}

// Odd but valid ids and types are accepted; what is bounded is what we store and index.
const printable = (max: number) => z.string().min(1).max(max).regex(/^[\x21-\x7e]+$/);

const eventShape = z.object({
  id: printable(255),
  object: z.literal('event'),
  type: printable(255),
  created: z.number().int().nonnegative(),
  livemode: z.boolean(),
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});

const INVALID_SIGNATURE = 'invalid Stripe-Signature: check STRIPE_WEBHOOK_SECRET and the server clock';
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function parseWebhook(rawBody: Buffer, signatureHeader: unknown, secrets: readonly string[]): IncomingEvent {
  if (typeof signatureHeader !== 'string' || signatureHeader === '') {
    throw new WebhookRejection('missing Stripe-Signature header');
  }
  // Stripe's libraries only bound a signature's age; a timestamp far in the future would stretch
  // the window in which a captured delivery can be replayed, so it is bounded too.
  const timestamp = /(?:^|,)\s*t=(\d{1,12})(?:,|$)/.exec(signatureHeader)?.[1];
  if (timestamp !== undefined && Number(timestamp) > Date.now() / 1000 + SIGNATURE_TOLERANCE_SECONDS) {
    throw new WebhookRejection(INVALID_SIGNATURE);
  }
  // Every configured secret is tried, so a rotation (old and new secret both live) loses nothing.
  const verified = secrets.some((secret) => {
    try {
      return Stripe.webhooks.signature!.verifyHeader(rawBody, signatureHeader, secret, SIGNATURE_TOLERANCE_SECONDS);
    } catch {
      return false;
    }
  });
  if (!verified) throw new WebhookRejection(INVALID_SIGNATURE);

  let text: string;
  let json: unknown;
  try {
    text = utf8.decode(rawBody);
    json = JSON.parse(text);
  } catch {
    throw new WebhookRejection('malformed event: body is not UTF-8 JSON');
  }
  const parsed = eventShape.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new WebhookRejection(`malformed event: ${issue?.path.join('.') || 'body'} is missing or invalid`);
  }
  // jsonb cannot hold NUL characters; refusing here keeps a database error (a 5xx, hence a
  // retry loop) off the webhook path.
  if (text.includes('\\u0000')) throw new WebhookRejection('malformed event: contains a NUL character');

  const event = parsed.data;
  const objectId = event.data.object.id;
  return {
    eventId: event.id,
    type: event.type,
    objectId: typeof objectId === 'string' ? objectId : null,
    livemode: event.livemode,
    stripeCreatedAt: new Date(event.created * 1000),
    rawBody: text,
  };
}
