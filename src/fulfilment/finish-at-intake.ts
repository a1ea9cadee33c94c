// Events no module acts on are finished when they are claimed. Stripe endpoints are often
// subscribed to more types than the modules act on, and some types only tell again what another
// type fulfils (payment_intent.succeeded beside the checkout.session.completed that grants): such
// an event would otherwise take a job, a fetch of that job, a row lock and a second write of its
// row, all to end as its claim could have stored it. It is stored as fulfilment would end it:
// 'processed' when every module that lists it only records it (recordOnly), 'ignored' when none
// lists it (a thin one saying so, as dispatch.ts does).
//
// During a deploy another release claims beside this one: a type that release acts on, this one
// may only record. Every release registers the types it acts on when it starts (sql/0031), and
// the claim statement gives a job to any type registered there, whichever release claims it.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { IncomingEvent, IntakeFinish } from '../events/event-store.js';
import { GENERATION_FAILURE_TYPE, isThinType, snapshotTypeOf } from '../stripe/thin-events.js';
import type { EventHandler, Handlers } from '../module-contract.js';

/**
 * For a type that only tells us what we already know or will learn from the type that fulfils
 * (payment_intent.succeeded beside checkout.session.completed): stored for the audit trail and
 * 'processed', never acted on. Acting on both would grant twice. Known here by identity.
 */
export const recordOnly: EventHandler = () => Promise.resolve({ status: 'processed' });

export interface IntakeRule {
  /** The types some module acts on: what this release registers. */
  readonly actedOn: readonly string[];
  /** How an event nothing acts on ends at its claim; undefined for one that needs its job. */
  finish(event: IncomingEvent): IntakeFinish | undefined;
}

export function intakeRule(handlers: readonly Handlers[], livemode: boolean): IntakeRule {
  const actedOn = new Set<string>();
  const recorded = new Set<string>();
  for (const moduleHandlers of handlers) {
    for (const [type, handler] of Object.entries(moduleHandlers)) (handler === recordOnly ? recorded : actedOn).add(type);
  }
  for (const type of actedOn) recorded.delete(type);
  // The alert for an Event Stripe failed to generate may stand for any type a module acts on
  // (missed-event.ts): the core acts on it whenever some module acts on anything, so no claim
  // finishes it without its job.
  if (actedOn.size > 0) actedOn.add(GENERATION_FAILURE_TYPE);
  return {
    actedOn: [...actedOn].sort(),
    finish(event) {
      // An event of the other mode fails visibly in fulfilment (dispatch.ts): it gets its job.
      if (event.livemode !== livemode) return undefined;
      const type = snapshotTypeOf(event.type) ?? event.type;
      if (actedOn.has(type)) return undefined;
      if (recorded.has(type)) return { status: 'processed', reason: null, actedOnAs: type };
      return { status: 'ignored', reason: isThinType(event.type) ? `no module handles ${event.type}` : null, actedOnAs: type };
    },
  };
}

/** At start-up, before the first claim: this release's types join those every release acts on. */
export async function registerActedOnTypes(db: Kysely<Database>, rule: IntakeRule): Promise<void> {
  if (rule.actedOn.length === 0) return;
  await sql`insert into event_types_acted_on (event_type) select unnest(${rule.actedOn}::text[]) on conflict do nothing`.execute(db);
}
