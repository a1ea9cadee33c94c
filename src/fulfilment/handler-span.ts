// The span of one handler call (docs/operations.md, "Tracing"), a child of the fulfilment batch's
// CONSUMER span. A batch handler takes several events at once, so the event attributes are lists,
// one entry per event in the order the handler was given them; a single handler's have one entry.
import type { StripeEventRow } from '../db/schema.js';
import { RetryLaterError, type FinishOutcome } from '../outcomes.js';
import { inSpan, tracingOn } from '../tracing/trace-context.js';

type HandlerResult = FinishOutcome | Error;

/** Runs `call` in its span when tracing is on; as is when not. */
export function inHandlerSpan<R extends HandlerResult | HandlerResult[]>(
  module: string,
  type: string,
  events: readonly StripeEventRow[],
  call: () => Promise<R>,
): Promise<R> {
  if (!tracingOn()) return call();
  const attributes = {
    'stripe_inbox.module': module,
    'stripe_inbox.handler': type,
    'stripe.event.type': type,
    'stripe.event.ids': events.map((event) => event.event_id),
    'stripe_inbox.attempts': events.map((event) => event.attempts + 1),
  };
  return inSpan(`handler ${module} ${type}`, { attributes }, async (span) => {
    const result = await call();
    const results: HandlerResult[] = Array.isArray(result) ? result : [result];
    span.setAttribute('stripe_inbox.outcomes', results.map(outcomeName));
    return result;
  });
}

/** An event's outcome as the span tells it: its status, `waiting` (RetryLaterError) or `error`. */
function outcomeName(result: HandlerResult): string {
  if (result instanceof RetryLaterError) return 'waiting';
  return result instanceof Error ? 'error' : result.status;
}
