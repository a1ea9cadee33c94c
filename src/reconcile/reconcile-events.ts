// Reconcile: pull events we never received from Stripe's Events API (it keeps 30 days), and the
// notifications of a thin destination from its v2 events list, and claim
// them through the same path as the webhook. For an endpoint that was down longer than Stripe's
// retry window, or disabled, or deliveries Stripe gave up on. Idempotent: an event we already
// have is skipped by the claim itself (its id is the primary key), so running it twice changes
// nothing.
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { Database } from '../db/schema.js';
import { claimEvents, type IncomingEvent } from '../events/event-store.js';
import { toIncomingEvent, toIncomingNotification, type ThinNotification } from '../stripe/webhook-event.js';

/** Stripe's Events API lists events of the last 30 days only. */
export const STRIPE_EVENTS_RETENTION_DAYS = 30;

export interface ReconcileOptions {
  since: Date;
  /** Only events Stripe itself failed to deliver (delivery_success=false). */
  undeliveredOnly?: boolean;
  dryRun?: boolean;
  maxAttempts: number;
  /** Both, unless told: a thin destination's events are only in the v2 list. */
  lists?: ReconcileLists;
}

export interface ReconcileResult {
  listed: number;
  missing: number;
  claimed: number;
  dry_run: boolean;
  event_ids: string[];
}

const PAGE_SIZE = 100;

/** Which of Stripe's lists to read: the Events API (snapshot events), the v2 events list (thin), or both. */
export type ReconcileLists = 'snapshot' | 'thin' | 'both';

export async function reconcileEvents(db: Kysely<Database>, stripe: Stripe, options: ReconcileOptions): Promise<ReconcileResult> {
  const result: ReconcileResult = { listed: 0, missing: 0, claimed: 0, dry_run: options.dryRun ?? false, event_ids: [] };
  const lists = options.lists ?? 'both';
  const claimMissing = async (page: IncomingEvent[]) => {
    const known = await db.selectFrom('stripe_events').select('event_id').where('event_id', 'in', page.map((e) => e.eventId)).execute();
    const have = new Set(known.map((r) => r.event_id));
    const missing = page.filter((e) => !have.has(e.eventId));
    result.missing += missing.length;
    if (!result.dry_run && missing.length > 0) {
      const outcomes = await claimEvents(db, missing, { maxAttempts: options.maxAttempts });
      missing.forEach((e, i) => outcomes[i] === 'claimed' && (result.claimed++, result.event_ids.push(e.eventId)));
    } else {
      result.event_ids.push(...missing.map((e) => e.eventId));
    }
  };
  const claimAll = async (events: AsyncIterable<IncomingEvent>) => {
    let page: IncomingEvent[] = [];
    for await (const event of events) {
      result.listed++;
      page.push(event);
      if (page.length === PAGE_SIZE) {
        await claimMissing(page);
        page = [];
      }
    }
    if (page.length > 0) await claimMissing(page);
  };
  // Not the bytes of a webhook delivery (there was none), but the same object.
  if (lists !== 'thin') {
    await claimAll(mapped(stripe.events.list({
      created: { gte: Math.floor(options.since.getTime() / 1000) },
      limit: PAGE_SIZE,
      ...(options.undeliveredOnly && { delivery_success: false }),
    }), (event) => toIncomingEvent(event, Buffer.from(JSON.stringify(event)))));
  }
  if (lists !== 'snapshot') {
    // A thin destination's notifications: the v2 list, paged by its own next_page_url. Its
    // `created` filter takes an RFC 3339 time, as every v2 timestamp (the SDK types it as a number).
    const created = { gte: options.since.toISOString() } as unknown as Stripe.RangeQueryParam;
    await claimAll(mapped(stripe.v2.core.events.list({ created, limit: PAGE_SIZE }), (notification) =>
      toIncomingNotification(notification as unknown as ThinNotification, Buffer.from(JSON.stringify(notification)))));
  }
  return result;
}

async function* mapped<T, U>(items: AsyncIterable<T>, map: (item: T) => U): AsyncIterable<U> {
  for await (const item of items) yield map(item);
}
