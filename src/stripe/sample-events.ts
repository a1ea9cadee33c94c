// Realistic Stripe events built from Stripe's own published example objects (fixtures/, from
// the stripe/openapi repository, the ones stripe-mock serves), overriding only what matters.
// Used by `npm run send-event` (our local `stripe trigger`) and by the tests; never by the
// service itself. Signing is Stripe's: Stripe.webhooks.generateTestHeaderString.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Stripe } from './sdk.js';
import { GENERATION_FAILURE_TYPE } from './thin-events.js';

const FIXTURES = new URL('./fixtures/', import.meta.url);
const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8')) as Record<string, unknown>;

export const randomStripeId = (prefix: string) => `${prefix}_test_${randomBytes(12).toString('hex')}`;

export interface SampleEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  livemode: boolean;
  api_version: string;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  data: { object: Record<string, unknown> };
}

export function sampleEvent(type: string, object: Record<string, unknown>, overrides: Partial<SampleEvent> = {}): SampleEvent {
  return {
    id: randomStripeId('evt'),
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    api_version: '2026-10-28.endive',
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
    ...overrides,
  };
}

export interface PaidSessionInput {
  orderId: string;
  amount: number;
  currency: string;
  sessionId?: string;
  paymentIntentId?: string;
  paymentStatus?: 'paid' | 'unpaid' | 'no_payment_required';
}

/** A completed Checkout Session for one of our orders, shaped exactly like Stripe's. */
export function checkoutSession(input: PaidSessionInput): Record<string, unknown> {
  return {
    ...fixture('checkout.session'),
    id: input.sessionId ?? randomStripeId('cs'),
    amount_subtotal: input.amount,
    amount_total: input.amount,
    currency: input.currency,
    client_reference_id: input.orderId,
    metadata: { order_id: input.orderId },
    // Each session has its own PaymentIntent; refunds find the order through it.
    payment_intent: input.paymentIntentId ?? randomStripeId('pi'),
    payment_status: input.paymentStatus ?? 'paid',
    status: 'complete',
  };
}

/**
 * A charge of one of our Checkout payments, refunded by `amountRefunded` so far (cumulative). It
 * carries its order's id (`orderId`) as ours do: Stripe copies the PaymentIntent's metadata, which
 * POST /api/checkout sets, to the charge.
 */
export function refundedCharge(input: {
  paymentIntentId: string;
  amount: number;
  currency: string;
  amountRefunded: number;
  orderId?: string;
}): Record<string, unknown> {
  return {
    ...fixture('charge'),
    ...(input.orderId !== undefined && { metadata: { order_id: input.orderId } }),
    id: randomStripeId('ch'),
    amount: input.amount,
    amount_captured: input.amount,
    amount_refunded: input.amountRefunded,
    currency: input.currency,
    payment_intent: input.paymentIntentId,
    refunded: input.amountRefunded >= input.amount,
  };
}

/** A dispute of a charge paid by `paymentIntentId` (null: a charge with none), in Stripe's `status`. */
export function disputeObject(input: {
  paymentIntentId: string | null;
  amount: number;
  currency: string;
  status: string;
  disputeId?: string;
  chargeId?: string;
}): Record<string, unknown> {
  return {
    ...fixture('dispute'),
    id: input.disputeId ?? randomStripeId('dp'),
    charge: input.chargeId ?? randomStripeId('ch'),
    payment_intent: input.paymentIntentId,
    amount: input.amount,
    currency: input.currency,
    status: input.status,
  };
}

/** The example object for a type we do not act on (telemetry, ignored types). */
export function exampleObject(
  name:
    | 'charge'
    | 'payment_intent'
    | 'refund'
    | 'checkout.session'
    | 'invoice'
    | 'subscription'
    | 'price'
    | 'product'
    | 'dispute'
    | 'entitlements.active_entitlement_summary'
    // Stripe's published example of a v2 event as GET /v2/core/events/:id answers it (a meter's error report).
    | 'v2.core.event',
): Record<string, unknown> {
  return fixture(name);
}

/** A thin notification (an event destination's thin payload), as the SDK's EventNotification types it. */
export interface ThinNotification {
  id: string;
  object: 'v2.core.event';
  type: string;
  created: string;
  livemode: boolean;
  related_object: { id: string; type: string; url: string } | null;
  snapshot_event?: string;
  reason?: { type: 'request'; request: { id: string; idempotency_key: string } };
}

/** The API path of an object, as a thin notification's related_object.url names it. */
export function objectUrl(object: { id: string; object: string }): string {
  const collection = object.object === 'checkout.session' ? 'checkout/sessions' : `${object.object.replaceAll('.', '/')}s`;
  return `/v1/${collection}/${object.id}`;
}

/**
 * The thin notification of a snapshot event's happening, as a thin destination delivers it:
 * type `v1.<type>`, the object by reference, and `snapshot_event` naming the snapshot event
 * (`withSnapshot: false`: without it, as Stripe sends when there is no snapshot to name).
 */
export function thinNotification(event: SampleEvent, { withSnapshot = true } = {}): ThinNotification {
  const object = event.data.object as { id?: string; object: string };
  return {
    id: randomStripeId('evt'),
    object: 'v2.core.event',
    type: `v1.${event.type}`,
    created: new Date(event.created * 1000).toISOString(),
    livemode: event.livemode,
    // An object without an id of its own (an active entitlement summary, the customer's) has no
    // URL: Stripe's thin event of it names only its snapshot event.
    related_object: object.id === undefined ? null : { id: object.id, type: object.object, url: objectUrl({ id: object.id, object: object.object }) },
    ...(withSnapshot && { snapshot_event: event.id }),
  };
}

/**
 * Stripe's alert that it failed to generate `missed` (docs/operations.md, "Events Stripe failed to
 * generate"): the thin notification as delivered, naming no object, and the event that
 * GET /v2/core/events/:id answers with, whose `data.impact` names the missed type and object.
 * `context`: the connected account the missed event belonged to; `url`: where the object is fetched.
 */
export function generationFailureAlert(
  missed: SampleEvent,
  { type = missed.type, url, context }: { type?: string; url?: string; context?: string } = {},
): { notification: ThinNotification; event: Record<string, unknown> } {
  const object = missed.data.object as { id: string; object: string };
  const notification: ThinNotification = {
    id: randomStripeId('evt'),
    object: 'v2.core.event',
    type: GENERATION_FAILURE_TYPE,
    created: new Date().toISOString(),
    livemode: missed.livemode,
    related_object: null,
  };
  const impact = { event_type: type, related_object: { id: object.id, type: object.object, url: url ?? objectUrl(object) }, ...(context && { context }) };
  const data = {
    alert_id: randomStripeId('halert'),
    grouping_key: randomStripeId('_grouping'),
    summary: `Stripe failed to generate a ${type} event`,
    resolved_at: new Date().toISOString(),
    severity: 'critical',
    impact,
  };
  return { notification, event: { ...notification, data } };
}

export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

/** Serialises and signs an event the way Stripe does for one delivery attempt. */
export function signDelivery(event: unknown, secret: string, options: { timestamp?: number } = {}): SignedDelivery {
  const body = typeof event === 'string' ? event : JSON.stringify(event, null, 2);
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret,
    ...(options.timestamp !== undefined && { timestamp: options.timestamp }),
  });
  return { body, headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature } };
}
