// Unique events for the bench, built from one sample event (src/stripe/sample-events.ts: Stripe's
// own example object) by substituting ids into its JSON, because building and serialising 100k
// events one by one would take longer than the run. The same i gives the same bytes, so every
// server in one run gets the same requests.
// - checkout.session.completed (eventBodies): event i pays order `ord_bench_<run>_<i>` (4900 chf:
//   the 'starter' package), which stored its session `cs_bench_<run>_<i>`.
// - payment_intent.succeeded (paymentIntentBodies): the PaymentIntent `pi_bench_<run>_<i>` of such
//   a payment, a type the service stores and records without acting on it; no order needed.
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import type { IncomingEvent } from '../../src/events/event-store.js';
import { checkoutSession, exampleObject, sampleEvent } from '../../src/stripe/sample-events.js';

export const BENCH_PACKAGE = { id: 'starter', amount: 4900, currency: 'chf' } as const;
const TYPE = 'checkout.session.completed';
const SLOT = '__BENCH_ID__';

/** The ingest part's workloads (`--event`), by the Stripe event type each request carries. */
export const BENCH_EVENTS = { checkout: TYPE, 'payment-intent': 'payment_intent.succeeded' } as const;
export type BenchEvent = keyof typeof BENCH_EVENTS;

/** Unique signed-to-be bodies of one event type. */
export interface WebhookBodies {
  readonly count: number;
  /** The Stripe event type every body carries. */
  readonly type: string;
  /** The compact JSON of event i, as Stripe would send it. */
  body(i: number): string;
  eventId(i: number): string;
}

export interface EventBodies extends WebhookBodies {
  /** The compact JSON of event i (about 3.3 KB), as Stripe would send it. */
  body(i: number): string;
  orderId(i: number): string;
  /** The Checkout Session event i completes, which its order must have stored to be paid by it. */
  sessionId(i: number): string;
  /** Event i as the webhook route would hand it to claimEvents. */
  incoming(i: number): IncomingEvent;
}

const runKey = () => {
  const run = randomBytes(4).toString('hex');
  return (i: number) => `bench_${run}_${i}`;
};

export function eventBodies(count: number): EventBodies {
  const key = runKey();
  const created = Math.floor(Date.now() / 1000);
  const event = sampleEvent(
    TYPE,
    checkoutSession({ orderId: `ord_${SLOT}`, sessionId: `cs_${SLOT}`, amount: BENCH_PACKAGE.amount, currency: BENCH_PACKAGE.currency }),
    {
      id: `evt_${SLOT}`,
      created,
    },
  );
  const parts = JSON.stringify(event).split(SLOT);
  const body = (i: number) => parts.join(key(i));
  return {
    count,
    type: TYPE,
    body,
    orderId: (i) => `ord_${key(i)}`,
    sessionId: (i) => `cs_${key(i)}`,
    eventId: (i) => `evt_${key(i)}`,
    incoming: (i) => ({
      eventId: `evt_${key(i)}`,
      type: TYPE,
      objectId: `cs_${key(i)}`,
      livemode: false,
      stripeCreatedAt: new Date(created * 1000),
      snapshotEventId: `evt_${key(i)}`,
      rawBody: Buffer.from(body(i)),
    }),
  };
}

/** The size of the external reviewer's payment_intent.succeeded events. */
const PAYMENT_INTENT_BYTES = 3 * 1024;
/** Stripe's limit on a metadata value. */
const METADATA_VALUE_CHARS = 500;

/**
 * payment_intent.succeeded events of about 3 KB, as the reviewer sent. Stripe's example
 * PaymentIntent, made a succeeded payment of the starter package (the metadata POST
 * /api/checkout gives a payment), is 1.5 KB as an event: the rest is padding, in metadata
 * values `bench_padding_<n>` cut from Stripe's example charge (its compact JSON without quotes),
 * so the padding compresses about as an event's own text does (the naive baseline's jsonb column
 * compresses; the service stores payloads uncompressed).
 */
export function paymentIntentBodies(count: number): WebhookBodies {
  const key = runKey();
  const type = BENCH_EVENTS['payment-intent'];
  const paymentIntent = {
    ...exampleObject('payment_intent'),
    id: `pi_${SLOT}`,
    amount: BENCH_PACKAGE.amount,
    amount_received: BENCH_PACKAGE.amount,
    currency: BENCH_PACKAGE.currency,
    client_secret: `pi_${SLOT}_secret_Dm43xiq1k0ywrRRjDoi8y1gkM`,
    status: 'succeeded',
    metadata: { order_id: `ord_${SLOT}`, account_id: `acct_${SLOT}` } as Record<string, string>,
  };
  const event = sampleEvent(type, paymentIntent, { id: `evt_${SLOT}`, created: Math.floor(Date.now() / 1000) });
  const filler = JSON.stringify(exampleObject('charge')).replace(/["\\]/g, '');
  const size = () => Buffer.byteLength(JSON.stringify(event).replaceAll(SLOT, key(0)));
  for (let n = 0, used = 0; size() < PAYMENT_INTENT_BYTES; n++) {
    const name = `bench_padding_${n}`;
    // The entry costs its name, its quotes, a colon and a comma besides its value.
    const chars = Math.min(METADATA_VALUE_CHARS, PAYMENT_INTENT_BYTES - size() - name.length - 6);
    if (chars <= 0 || used + chars > filler.length) break;
    paymentIntent.metadata[name] = filler.slice(used, used + chars);
    used += chars;
  }
  const parts = JSON.stringify(event).split(SLOT);
  return { count, type, body: (i) => parts.join(key(i)), eventId: (i) => `evt_${key(i)}` };
}

/** The Stripe-Signature header for one delivery, signed now (the service accepts 300 s). */
export function signatureHeader(body: string | Buffer, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return Stripe.webhooks.generateTestHeaderString({ payload: body.toString(), secret, timestamp });
}
