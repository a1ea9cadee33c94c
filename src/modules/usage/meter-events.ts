// The usage module's calls to Stripe: a report sent as a v1 meter event, and a meter's event
// summary for a customer, read to tell whether a report whose answer was lost was recorded.
//
// Why v1 (POST /v1/billing/meter_events) and not the v2 meter event stream: the stream takes up
// to 100 events a request, but needs a session token renewed every 15 minutes and validates
// asynchronously, so a refused event is only known from an error report later; v1 answers each
// event on its own (a refusal names its code at once) under our Idempotency-Key, and the pump
// sends its batch in parallel (docs/operations.md, "Usage reports", has the figures).
import { isStripeBusy, type StripeCalls } from '../../business-module.js';

export interface Report {
  usage_id: string;
  stripe_customer_id: string;
  event_name: string;
  quantity: number;
  used_at: Date;
  /** This send's number: names its Idempotency-Key. */
  attempts: number;
}

export type SendOutcome =
  /** Stripe answered with the event: recorded (or recorded before, under the same identifier). */
  | { outcome: 'recorded' }
  /** Stripe refused it: never recorded, and sending it again cannot help. */
  | { outcome: 'refused'; reason: string }
  /** It never reached Stripe, or Stripe said it did nothing (a rate limit): send again. */
  | { outcome: 'not_sent'; reason: string }
  /** It may have been recorded (a timeout, a 5xx, a lost connection): send again within the identifier window. */
  | { outcome: 'unknown'; reason: string };

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** Stripe's error as the SDK throws it: the fields read here. */
interface StripeErrorShape {
  type?: string;
  code?: string;
  param?: string;
  message?: string;
}

/**
 * Sends the report. `identifier` is the usage id: Stripe dedupes on it within at least 24 hours, so
 * a resend within that window is recorded once. The Idempotency-Key is the usage id and the
 * attempt: Stripe keeps the first answer of a key, a 500 too, and would replay it to every
 * resend under one key for 24 hours; the identifier is what keeps the event once.
 */
export async function sendMeterEvent(stripeCalls: StripeCalls, report: Report): Promise<SendOutcome> {
  try {
    await stripeCalls.run('meter_event_create', (stripe) =>
      stripe.billing.meterEvents.create(
        {
          event_name: report.event_name,
          identifier: report.usage_id,
          timestamp: seconds(report.used_at),
          payload: { stripe_customer_id: report.stripe_customer_id, value: String(report.quantity) },
        },
        { idempotencyKey: `usage-report:${report.usage_id}:${report.attempts}` },
      ),
    );
    return { outcome: 'recorded' };
  } catch (error) {
    return judged(error);
  }
}

function judged(error: unknown): SendOutcome {
  if (isStripeBusy(error)) return { outcome: 'not_sent', reason: 'Stripe calls at their bound (STRIPE_MAX_CONCURRENT_CALLS)' };
  const stripeError = (typeof error === 'object' && error !== null ? error : {}) as StripeErrorShape;
  switch (stripeError.type) {
    case 'StripeInvalidRequestError': {
      // An identifier Stripe already holds is the event recorded before, by a send whose answer was
      // lost: within its window Stripe answers 400 "An event already exists with identifier …".
      if (/identifier/i.test(stripeError.message ?? '') && /already/i.test(stripeError.message ?? '')) return { outcome: 'recorded' };
      const param = stripeError.param ? ` (${stripeError.param})` : '';
      return { outcome: 'refused', reason: `Stripe refused the meter event: ${stripeError.code ?? 'invalid request'}${param}` };
    }
    case 'StripeRateLimitError':
    case 'StripeAuthenticationError':
    case 'StripePermissionError':
      // Refused before anything was recorded: 429, 401, 403.
      return { outcome: 'not_sent', reason: `Stripe: ${stripeError.type}` };
    default:
      return { outcome: 'unknown', reason: `Stripe: ${stripeError.type ?? 'network error'} (the event may have been recorded)` };
  }
}

/** A whole minute's bounds around a moment: Stripe's event summaries start and end on minute boundaries. */
export function minuteOf(date: Date): { start: Date; end: Date } {
  const start = new Date(Math.floor(date.getTime() / 60_000) * 60_000);
  return { start, end: new Date(start.getTime() + 60_000) };
}

/** The meter's id for an event_name, from the active meters; undefined when there is none. */
async function meterIdOf(stripeCalls: StripeCalls, eventName: string): Promise<string | undefined> {
  const meters = await stripeCalls.run('meter_list', (stripe) => stripe.billing.meters.list({ status: 'active', limit: 100 }));
  return meters.data.find((meter) => meter.event_name === eventName)?.id;
}

/**
 * What the meter holds for the customer over the minute: its aggregated value (a sum meter's sum),
 * or why it cannot be read. Summaries are eventually consistent: read only for reports whose send
 * is a day old, long after Stripe aggregated it.
 */
export async function meterTotal(
  stripeCalls: StripeCalls,
  report: Pick<Report, 'event_name' | 'stripe_customer_id'>,
  window: { start: Date; end: Date },
): Promise<{ total: number } | { unreadable: string }> {
  const meterId = await meterIdOf(stripeCalls, report.event_name);
  if (meterId === undefined) return { unreadable: `Stripe has no active meter for event_name ${report.event_name}` };
  const summaries = await stripeCalls.run('meter_event_summaries', (stripe) =>
    stripe.billing.meters.listEventSummaries(meterId, {
      customer: report.stripe_customer_id,
      start_time: seconds(window.start),
      end_time: seconds(window.end),
    }),
  );
  return { total: summaries.data.reduce((sum, summary) => sum + summary.aggregated_value, 0) };
}
