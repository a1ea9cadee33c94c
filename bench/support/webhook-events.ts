// Unique checkout.session.completed events for the bench, built from one sample event
// (src/stripe/sample-events.ts: Stripe's own example object) by substituting ids into its JSON,
// because building and serialising 100k events one by one would take longer than the run.
// Event i pays order `ord_bench_<run>_<i>` (4900 chf: the 'starter' package), which stored its
// session `cs_bench_<run>_<i>`; the same i gives
// the same bytes, so every server in one run gets the same requests.
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import type { IncomingEvent } from '../../src/events/event-store.js';
import { checkoutSession, sampleEvent } from '../../src/stripe/sample-events.js';

export const BENCH_PACKAGE = { id: 'starter', amount: 4900, currency: 'chf' } as const;
const TYPE = 'checkout.session.completed';
const SLOT = '__BENCH_ID__';

export interface EventBodies {
  readonly count: number;
  /** The compact JSON of event i (about 3.3 KB), as Stripe would send it. */
  body(i: number): string;
  orderId(i: number): string;
  /** The Checkout Session event i completes, which its order must have stored to be paid by it. */
  sessionId(i: number): string;
  eventId(i: number): string;
  /** Event i as the webhook route would hand it to claimEvents. */
  incoming(i: number): IncomingEvent;
}

export function eventBodies(count: number): EventBodies {
  const run = randomBytes(4).toString('hex');
  const created = Math.floor(Date.now() / 1000);
  const event = sampleEvent(TYPE, checkoutSession({ orderId: `ord_${SLOT}`, sessionId: `cs_${SLOT}`, amount: BENCH_PACKAGE.amount, currency: BENCH_PACKAGE.currency }), {
    id: `evt_${SLOT}`,
    created,
  });
  const parts = JSON.stringify(event).split(SLOT);
  const key = (i: number) => `bench_${run}_${i}`;
  const body = (i: number) => parts.join(key(i));
  return {
    count,
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

/** The Stripe-Signature header for one delivery, signed now (the service accepts 300 s). */
export function signatureHeader(body: string | Buffer, secret: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return Stripe.webhooks.generateTestHeaderString({ payload: body.toString(), secret, timestamp });
}
