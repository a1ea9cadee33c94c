// Reconcile: pull events we never received from Stripe's Events API (it keeps 30 days) and claim
// them through the same path as the webhook. For an endpoint that was down longer than Stripe's
// retry window, or disabled, or deliveries Stripe gave up on. Idempotent: an event we already
// have is skipped by the claim itself (its id is the primary key), so running it twice changes
// nothing.
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { Database } from '../db/schema.js';
import { claimEvents } from '../events/event-store.js';
import { toIncomingEvent } from '../stripe/webhook-event.js';

/** Stripe's Events API lists events of the last 30 days only. */
export const STRIPE_EVENTS_RETENTION_DAYS = 30;

export interface ReconcileOptions {
  since: Date;
  /** Only events Stripe itself failed to deliver (delivery_success=false). */
  undeliveredOnly?: boolean;
  dryRun?: boolean;
  maxAttempts: number;
}

export interface ReconcileResult {
  listed: number;
  missing: number;
  claimed: number;
  dry_run: boolean;
  event_ids: string[];
}

const PAGE_SIZE = 100;

export async function reconcileEvents(db: Kysely<Database>, stripe: Stripe, options: ReconcileOptions): Promise<ReconcileResult> {
  const result: ReconcileResult = { listed: 0, missing: 0, claimed: 0, dry_run: options.dryRun ?? false, event_ids: [] };
  const list = stripe.events.list({
    created: { gte: Math.floor(options.since.getTime() / 1000) },
    limit: PAGE_SIZE,
    ...(options.undeliveredOnly && { delivery_success: false }),
  });
  let page: Stripe.Event[] = [];
  const flush = async () => {
    const known = await db.selectFrom('stripe_events').select('event_id').where('event_id', 'in', page.map((e) => e.id)).execute();
    const have = new Set(known.map((r) => r.event_id));
    const missing = page.filter((e) => !have.has(e.id));
    result.missing += missing.length;
    if (!result.dry_run && missing.length > 0) {
      // Not the bytes of a webhook delivery (there was none), but the same event object.
      const incoming = missing.map((e) => toIncomingEvent(e, Buffer.from(JSON.stringify(e))));
      const outcomes = await claimEvents(db, incoming, { maxAttempts: options.maxAttempts });
      missing.forEach((e, i) => outcomes[i] === 'claimed' && (result.claimed++, result.event_ids.push(e.id)));
    } else {
      result.event_ids.push(...missing.map((e) => e.id));
    }
    page = [];
  };
  for await (const event of list) {
    result.listed++;
    page.push(event);
    if (page.length === PAGE_SIZE) await flush();
  }
  if (page.length > 0) await flush();
  return result;
}
