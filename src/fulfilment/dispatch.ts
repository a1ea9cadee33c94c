// Runs the business modules' handlers for a batch of events, inside the fulfilment transaction.
// The core knows no event type: each module lists the types it acts on (src/business-module.ts),
// and a type no module lists is stored and ends 'ignored' (we still answer Stripe 2xx: a 4xx
// would make Stripe retry it for three days).
//
// Two modules may list one type (checkout.session.completed is a package payment or a
// subscription's first): each handler sees every event of the type, answers 'ignored' for what
// is not its own, and the event's outcome is the first that is not 'ignored', in module order.
// A RetryLaterError ("not known here yet") counts only when no other module acted on the event:
// a refund of a subscription's payment waits in the packages module, done by the other. When
// every module ignores it, the event keeps each module's reason.
import type { Transaction } from 'kysely';
import type { Database, StripeEventRow } from '../db/schema.js';
import type { BatchHandler, Handler, Handlers } from '../module-contract.js';
import { ownerOfHandlers } from './handler-owners.js';
import { describeError, PermanentError, RetryLaterError, type FinishOutcome } from '../outcomes.js';
import { isThinType } from '../stripe/thin-events.js';
import { inHandlerSpan } from './handler-span.js';

/**
 * Runs the handlers for a batch of events in one transaction and returns their outcomes, in order:
 * how each ends, or the RetryLaterError of an event that waits (the caller parks it, in the same
 * transaction). A failure it can pin on one event throws HandlerError for that event; any other
 * error (a batch statement failing for several events) is thrown as is. Either way the caller
 * rolls back. The
 * events' payloads are the handlers' only while it runs: the caller drops them once it returns.
 */
export interface Dispatch {
  run(tx: Transaction<Database>, events: readonly StripeEventRow[]): Promise<Array<FinishOutcome | RetryLaterError>>;
  /** Whether some module acts on this type: a thin notification of any other is not fetched. */
  handles(type: string): boolean;
}

/**
 * A handler's failure, attributed to its event: carried out of the fulfilment transaction so the
 * rollback happens first, then counted against that event alone (fulfil-event.ts).
 */
export class HandlerError extends Error {
  constructor(
    readonly event: StripeEventRow,
    readonly error: unknown,
  ) {
    super(describeError(error), { cause: error });
    this.name = 'HandlerError';
  }
}

export interface DispatchOptions {
  /** The mode of our Stripe key: an event of the other mode never acts here. */
  livemode: boolean;
  /** Each module's handlers, in module order. */
  handlers: readonly Handlers[];
}

export function createDispatch({ livemode, handlers }: DispatchOptions): Dispatch {
  const byType = new Map<string, Handler[]>();
  const moduleOf = new Map<Handler, string>();
  for (const moduleHandlers of handlers) {
    for (const [type, handler] of Object.entries(moduleHandlers)) {
      byType.set(type, [...(byType.get(type) ?? []), handler]);
      moduleOf.set(handler, ownerOfHandlers(moduleHandlers));
    }
  }
  const handlersOf = (event: StripeEventRow) => byType.get(event.type) ?? [];

  const run: Dispatch['run'] = async (tx, events) => {
    // A test-mode event reaching a live service (or the reverse) is a misconfigured endpoint or
    // secret: it must never grant. It ends 'failed', visible in status, instead of being answered
    // 4xx, which Stripe would retry for three days.
    const stray = events.find((event) => event.livemode !== livemode);
    if (stray) {
      throw new HandlerError(
        stray,
        new PermanentError(`livemode mismatch: a ${stray.livemode ? 'live' : 'test'}-mode event reached a ${livemode ? 'live' : 'test'}-mode service`),
      );
    }
    const results = new Map<StripeEventRow, Map<Handler, FinishOutcome | RetryLaterError>>(events.map((event) => [event, new Map()]));
    const record = (event: StripeEventRow, handler: Handler, result: FinishOutcome | Error) => {
      if (result instanceof Error && !(result instanceof RetryLaterError)) throw new HandlerError(event, result);
      results.get(event)!.set(handler, result);
    };
    const batchesRun = new Set<BatchHandler>();
    // In list order, except that a batch handler takes all of its events at the first of them
    // (payments before a refund of the same batch, which is also the order Stripe's happen in).
    for (const event of events) {
      for (const handler of handlersOf(event)) {
        if (typeof handler === 'function') {
          let result: FinishOutcome | Error;
          try {
            result = await inHandlerSpan(moduleOf.get(handler)!, event.type, [event], () => handler(tx, event));
          } catch (error) {
            result = error instanceof Error ? error : new Error(String(error));
          }
          record(event, handler, result);
          continue;
        }
        if (batchesRun.has(handler.batch)) continue;
        batchesRun.add(handler.batch);
        // A module registers one { batch } per type: the function, not the registration, is the batch.
        const wrapperOf = (e: StripeEventRow) => handlersOf(e).find((h) => typeof h !== 'function' && h.batch === handler.batch);
        const group = events.filter((e) => wrapperOf(e) !== undefined);
        let batchResults: Array<FinishOutcome | Error>;
        try {
          batchResults = await inHandlerSpan(moduleOf.get(handler)!, event.type, group, () => handler.batch(tx, group));
        } catch (error) {
          if (group.length === 1) throw new HandlerError(event, error);
          throw error;
        }
        for (const [i, member] of group.entries()) record(member, wrapperOf(member)!, batchResults[i]!);
      }
    }
    return events.map((event): FinishOutcome | RetryLaterError => {
      const byHandler = results.get(event)!;
      const answers = handlersOf(event).map((handler) => byHandler.get(handler)!);
      // A snapshot type nobody lists is common and needs no word; a thin one was not fetched.
      if (answers.length === 0 && isThinType(event.type)) return { status: 'ignored', reason: `no module handles ${event.type}` };
      const acted = answers.find((answer): answer is FinishOutcome => !(answer instanceof Error) && answer.status !== 'ignored');
      if (acted) return acted;
      // Every module that waits says for what, and what it waits for wakes the event; when the
      // wait gives up, the event ends 'ignored' only if all of them may.
      const waiting = answers.filter((answer) => answer instanceof RetryLaterError);
      if (waiting.length === 1) return waiting[0]!;
      if (waiting.length > 1) {
        return new RetryLaterError(waiting.map((error) => error.message).join('; '), {
          waitsFor: waiting.flatMap((error) => error.waitsFor),
          ignoreWhenExhausted: waiting.every((error) => error.ignoreWhenExhausted),
        });
      }
      // Each module that says why it is not its own is heard: ops sees every reason at once.
      const reasons = answers.flatMap((answer) =>
        !(answer instanceof Error) && answer.status === 'ignored' && answer.reason !== undefined ? [answer.reason] : [],
      );
      return reasons.length === 0 ? { status: 'ignored' } : { status: 'ignored', reason: reasons.join('; ') };
    });
  };
  return { run, handles: (type) => byType.has(type) };
}
