// What a thin notification's handlers read: the worker fetches it, outside any transaction, through
// the bounded Stripe calls (StripeCalls: a deadline, a bound on calls in flight, the SDK's retry)
// at the pace of a CallRate. The handlers then see the event as a snapshot event of the v1 type,
// so each module keeps one source of truth per type (docs/events.md, "Thin events").
//
// Which source: the snapshot event the notification names (GET /v1/events/:id), which holds the
// object as it was at the event, in the account's API version, like a snapshot delivery; failing
// that, the related object's current state (GET of related_object.url), stamped with the second
// the fetch began, as the subscription refetch stamps what it fetches: a handler that orders states by time
// then compares it with what is true at that second, not at the event. An alert of an Event Stripe
// failed to generate is fulfilled from its related object the same way (missed-event.ts).
import { z } from 'zod';
import type { StripeEventRow } from '../db/schema.js';
import type { CallRate } from '../stripe/call-rate.js';
import type { StripeCalls } from '../stripe/stripe-calls.js';
import { quoted } from '../quoted.js';
import { modeMismatch } from '../stripe/own-mode.js';
import { Stripe } from '../stripe/sdk.js';
import { apiPathOf, EVENT_DATA_TYPES, GENERATION_FAILURE_TYPE, snapshotTypeOf } from '../stripe/thin-events.js';
import { PermanentError, type FinishOutcome } from '../outcomes.js';
import { fetchMissedEvent, type CurrentState, type OwnModeGet } from './missed-event.js';

/**
 * The event as its handlers read it: type, payload (and, for a current state, its time) replaced;
 * or, for an alert of a missed type no module acts on, how it ends without them.
 */
export type FetchThin = (event: StripeEventRow) => Promise<StripeEventRow | { finish: FinishOutcome }>;

// What the webhook route checked before storing it (src/stripe/webhook-event.ts); read back here.
const storedNotification = z.object({
  related_object: z.object({ url: z.string() }).nullish(),
  snapshot_event: z.string().nullish(),
  context: z.string().nullish(),
});

/** What Stripe answered is of the other mode than our key: like a delivered event of it (dispatch.ts), it never acts here. */
function refuseOtherMode(what: string, fetchedLivemode: unknown, livemode: boolean): void {
  const mismatch = modeMismatch(what, fetchedLivemode, livemode);
  if (mismatch !== undefined) throw new PermanentError(mismatch);
}

/**
 * `livemode`: the mode of our Stripe key, which what is fetched must share. `handles`: whether some
 * module acts on a type (dispatch.ts), asked of the type an alert says Stripe failed to generate.
 */
export function thinFetcher(stripeCalls: StripeCalls, rate: CallRate, livemode: boolean, handles: (type: string) => boolean): FetchThin {
  const get = async (operation: string, url: string, event: StripeEventRow, context: string | null | undefined): Promise<Record<string, unknown>> => {
    // Fetched with our secret key: never a path outside the API, whatever the stored URL says.
    const path = apiPathOf(url);
    if (path === undefined) {
      throw new PermanentError(`thin event: ${quoted(url)} is not a path of Stripe's /v1/ or /v2/ API once resolved: refused, nothing fetched`);
    }
    await rate.take();
    try {
      return (await stripeCalls.run(operation, (stripe) =>
        stripe.rawRequest('GET', path, undefined, {
          ...(context && { stripeContext: context }),
          headers: { 'Stripe-Request-Trigger': `event=${event.event_id}` },
        }),
      )) as Record<string, unknown>;
    } catch (error) {
      // Gone for good (deleted, another account's, past Stripe's 30 days of events): retrying
      // cannot help. Anything else (5xx, timeout, no free slot) is transient and retried.
      if (error instanceof Stripe.errors.StripeError && error.statusCode === 404) {
        throw new PermanentError(`thin event: Stripe answered 404 for GET ${path}: ${error.message}`, { cause: error });
      }
      throw error;
    }
  };

  const getOwnMode =
    (event: StripeEventRow): OwnModeGet =>
    async (operation, url, context, what) => {
      const object = await get(operation, url, event, context);
      // An event (v1 or v2) always says its mode, so one that does not cannot show it is ours; an
      // object that says its mode (most do) must be of ours.
      if (operation === 'thin_fetch_event' || 'livemode' in object) refuseOtherMode(what, object.livemode, livemode);
      return object;
    };

  return async (event) => {
    const notification = storedNotification.safeParse(event.payload);
    if (event.type === GENERATION_FAILURE_TYPE) {
      const missed = await fetchMissedEvent(getOwnMode(event), event, notification.success ? notification.data.context : undefined, handles);
      return 'finish' in missed ? missed : asCurrentState(event, missed);
    }
    const type = snapshotTypeOf(event.type);
    if (type === undefined || !notification.success) throw new PermanentError(`thin event: ${event.type} names no related object to fetch`);
    const { snapshot_event: snapshotEvent, related_object: related, context } = notification.data;
    if (EVENT_DATA_TYPES.has(event.type)) {
      const full = await getOwnMode(event)('thin_fetch_event', `/v2/core/events/${encodeURIComponent(event.event_id)}`, context, `event ${event.event_id}`);
      const data = typeof full.data === 'object' && full.data !== null ? full.data : {};
      const object = { ...data, related_object: full.related_object ?? related };
      return { ...event, type, payload: { id: event.event_id, object: 'event', type, created: full.created, livemode: event.livemode, data: { object } } };
    }
    if (snapshotEvent) {
      const snapshot = await getOwnMode(event)(
        'thin_fetch_event',
        `/v1/events/${encodeURIComponent(snapshotEvent)}`,
        context,
        `snapshot event ${snapshotEvent}`,
      );
      return { ...event, type, payload: snapshot };
    }
    // An object without a URL of its own (an active entitlement summary) is named by its snapshot event only.
    if (!related) throw new PermanentError(`thin event: ${event.type} names no related object to fetch`);
    const began = Math.floor(Date.now() / 1000);
    const object = await getOwnMode(event)('thin_fetch_related_object', related.url, context, `the object at ${quoted(related.url)}`);
    return asCurrentState(event, { type, eventId: event.event_id, objectId: event.object_id, began, object });
  };
}

/** A fetched current state as a snapshot event of its type, stamped with the second its fetch began. */
function asCurrentState(event: StripeEventRow, { type, eventId, objectId, began, object }: CurrentState): StripeEventRow {
  return {
    ...event,
    type,
    object_id: objectId,
    stripe_created_at: new Date(began * 1000),
    payload: { id: eventId, object: 'event', type, created: began, livemode: event.livemode, data: { object } },
  };
}
