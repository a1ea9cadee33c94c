// The offline stand-in's Billing Meters: meters a test adds (event_name → meter id), meter events
// (POST /v1/billing/meter_events) deduplicated by identifier for exactly 24 hours of the stand-in's
// clock, which a test moves forward, and their summaries per customer
// (GET /v1/billing/meters/:id/event_summaries), a sum meter's.
//
// Stripe rules reproduced: an identifier is unique within 24 hours (Stripe: "at least"; here
// exactly, the worst case), after which the same identifier is a new event; a timestamp must be
// within the past 35 days and at most 5 minutes ahead; summaries start and end on minute boundaries.
import { invalid, integer, isRecord, missing, ok, randomId, StripeApiError, type Params, type Reply } from './wire.js';

const DAY_MS = 24 * 3600 * 1000;

interface MeterEvent {
  identifier: string;
  event_name: string;
  customer: string;
  value: number;
  /** Seconds, as sent. */
  timestamp: number;
  /** On the stand-in's clock, ms: when the identifier was taken. */
  recordedAt: number;
}

export class Meters {
  readonly meters = new Map<string, Params>();
  readonly events: MeterEvent[] = [];
  /** How far the stand-in's clock is ahead of the real one. */
  clockOffsetMs = 0;

  now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  /** Adds an active sum meter for `eventName`; its id. */
  addMeter(eventName: string): string {
    const id = `mtr_${randomId(24)}`;
    this.meters.set(id, { id, object: 'billing.meter', event_name: eventName, status: 'active', default_aggregation: { formula: 'sum' } });
    return id;
  }

  /** What the meter of `eventName` recorded for the customer, all time. */
  total(eventName: string, customer: string): number {
    return this.events.filter((e) => e.event_name === eventName && e.customer === customer).reduce((sum, e) => sum + e.value, 0);
  }

  route(method: string, path: string, params: Params): Reply | undefined {
    if (method === 'POST' && path === '/v1/billing/meter_events') return ok(this.record(params));
    if (method === 'GET' && path === '/v1/billing/meters') {
      const data = [...this.meters.values()].filter((m) => params.status === undefined || m.status === params.status);
      return ok({ object: 'list', url: path, has_more: false, data });
    }
    const meterId = /^\/v1\/billing\/meters\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && meterId !== undefined) {
      const meter = this.meters.get(decodeURIComponent(meterId));
      if (!meter)
        throw new StripeApiError(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'id', message: `No such meter: '${meterId}'` });
      return ok(meter);
    }
    const summaries = /^\/v1\/billing\/meters\/([^/]+)\/event_summaries$/.exec(path)?.[1];
    if (method === 'GET' && summaries !== undefined) return ok(this.summaries(decodeURIComponent(summaries), params));
    return undefined;
  }

  private record(params: Params): Params {
    if (typeof params.event_name !== 'string') throw missing('event_name');
    if (!isRecord(params.payload)) throw missing('payload');
    const customer = params.payload.stripe_customer_id;
    if (typeof customer !== 'string') throw missing('payload[stripe_customer_id]');
    const value = integer(params.payload.value, 'payload[value]');
    const now = this.now();
    const timestamp = params.timestamp === undefined ? Math.floor(now / 1000) : integer(params.timestamp, 'timestamp');
    if (timestamp * 1000 < now - 35 * DAY_MS) throw invalid('Timestamp must be within the past 35 calendar days.', 'timestamp', 'timestamp_too_far_in_past');
    if (timestamp * 1000 > now + 5 * 60_000) throw invalid('Timestamp must be at most 5 minutes in the future.', 'timestamp', 'timestamp_in_future');
    const identifier = typeof params.identifier === 'string' ? params.identifier : `offline_${randomId(20)}`;
    const answer = { object: 'billing.meter_event', event_name: params.event_name, identifier, livemode: false, payload: params.payload, timestamp };
    // Within the window the identifier's event is not recorded again, and Stripe says so with a 400
    // (seen from Stripe: "An event already exists with identifier …", Stripe-Should-Retry: false).
    const seen = this.events.findLast((e) => e.identifier === identifier);
    if (seen && now - seen.recordedAt < DAY_MS) throw invalid(`An event already exists with identifier ${identifier}.`, 'identifier');
    this.events.push({ identifier, event_name: params.event_name, customer, value, timestamp, recordedAt: now });
    return { ...answer, created: Math.floor(now / 1000) };
  }

  private summaries(meterId: string, params: Params): Params {
    const meter = this.meters.get(meterId);
    if (!meter) throw invalid(`No such meter: '${meterId}'`, 'id', 'resource_missing');
    if (typeof params.customer !== 'string') throw missing('customer');
    const start = integer(params.start_time, 'start_time');
    const end = integer(params.end_time, 'end_time');
    if (start % 60 !== 0 || end % 60 !== 0) throw invalid('start_time and end_time must be aligned with minute boundaries.', 'start_time');
    const value = this.events
      .filter((e) => e.event_name === meter.event_name && e.customer === params.customer && e.timestamp >= start && e.timestamp < end)
      .reduce((sum, e) => sum + e.value, 0);
    const summary = { id: `mtrusg_${randomId(24)}`, object: 'billing.meter_event_summary', aggregated_value: value, meter: meterId, livemode: false };
    return { object: 'list', url: `/v1/billing/meters/${meterId}/event_summaries`, has_more: false, data: [{ ...summary, start_time: start, end_time: end }] };
  }
}
