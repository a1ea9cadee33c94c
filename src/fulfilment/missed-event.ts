// Recovers an Event Stripe failed to generate. Such an event is never delivered and never listed by
// the Events API, so reconcile cannot see it; Stripe sends a thin alert instead,
// `v2.core.health.event_generation_failure.resolved`, whose thin payload names no object. Its data,
// fetched with GET /v2/core/events/:id, says what was missed. The shape used here is Stripe's
// EventsV2CoreHealthEventGenerationFailureResolvedEvent (stripe-java's
// V2CoreHealthEventGenerationFailureResolvedEvent.EventData.Impact; docs.stripe.com
// /webhooks/handle-irrecoverable-events; `severity` from the 2026-11-18 changelog):
//   data: { alert_id, grouping_key, summary, resolved_at, severity: 'critical' | 'non_critical',
//           impact: { event_type, related_object: { id, type, url }, context? } }
//
// The related object's current state stands in for the missed event, as a thin notification
// without a snapshot event is fulfilled from it (thin-fetch.ts): the handlers of the missed type
// decide from that state whether the outcome should have happened.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { StripeEventRow } from '../db/schema.js';
import { PermanentError, type FinishOutcome } from '../outcomes.js';
import { quoted } from '../quoted.js';

/** A GET through the bounded Stripe calls, refusing what is of the other mode. */
export type OwnModeGet = (operation: string, url: string, context: string | null | undefined, what: string) => Promise<Record<string, unknown>>;

const alertData = z.object({
  data: z.object({
    impact: z.object({
      event_type: z.string().min(1),
      related_object: z.object({ id: z.string().min(1), url: z.string() }),
      context: z.string().nullish(),
    }),
  }),
});

/**
 * The id the missed event is fulfilled under. Derived from what was missed, not from the alert:
 * Stripe may alert twice for one failure (two alert ids, the same object and type), and whatever a
 * handler derives from the event's id (an idempotency key, a notification) is then the same both
 * times. The `evtgen_` prefix keeps it apart from every id Stripe mints.
 */
function missedEventId(type: string, objectId: string): string {
  return `evtgen_${createHash('sha256').update(`${type}:${objectId}`).digest('hex').slice(0, 24)}`;
}

/** What a current state was fetched as: the snapshot event it stands for, and when its fetch began (Unix seconds). */
export interface CurrentState {
  type: string;
  eventId: string;
  objectId: string | null;
  began: number;
  object: Record<string, unknown>;
}

/**
 * The missed event's current state, or how the alert ends when no module acts on that type
 * (nothing else is fetched then). A 404 on either fetch is a PermanentError (OwnModeGet's). The
 * row it becomes keeps the alert's event_id, which stripe_events and the business keys refer to.
 */
export async function fetchMissedEvent(
  get: OwnModeGet,
  event: StripeEventRow,
  context: string | null | undefined,
  handles: (type: string) => boolean,
): Promise<CurrentState | { finish: FinishOutcome }> {
  const fetched = await get('thin_fetch_event', `/v2/core/events/${encodeURIComponent(event.event_id)}`, context, `event ${event.event_id}`);
  const alert = alertData.safeParse(fetched);
  if (!alert.success) throw new PermanentError(`thin event: ${event.type} ${event.event_id} has no data.impact naming a type and a related object`);
  const { event_type: type, related_object: related, context: impactContext } = alert.data.data.impact;
  if (!handles(type)) return { finish: { status: 'ignored', reason: `no module handles ${type}, the type Stripe failed to generate` } };
  const began = Math.floor(Date.now() / 1000);
  const object = await get('thin_fetch_related_object', related.url, impactContext ?? context, `the object at ${quoted(related.url)}`);
  return { type, eventId: missedEventId(type, related.id), objectId: related.id, began, object };
}
