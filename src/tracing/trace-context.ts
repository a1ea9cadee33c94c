// What the service's code uses to trace (docs/operations.md, "Tracing"): only @opentelemetry/api,
// whose calls do nothing without an SDK. The SDK itself is loaded by start-tracing.ts, and only when
// tracing is on; until then `tracingOn()` is false and every caller skips its tracing work
// altogether, so the webhook path pays one boolean check.
//
// The context travels between processes and through the database as a W3C traceparent
// (`00-<trace id>-<span id>-<flags>`): the event row keeps its webhook's, a notification its
// fulfilment's, and the app receives its delivery's. Written and read here rather than by the SDK's
// propagator, which the API alone does not carry.
import { context, isSpanContextValid, SpanStatusCode, trace, type Link, type Span, type SpanContext, type SpanOptions, type Tracer } from '@opentelemetry/api';
import { SERVICE_VERSION } from '../version.js';

let on = false;

/** Whether an SDK is registered: false unless start-tracing.ts started one. */
export function tracingOn(): boolean {
  return on;
}

/** Called by start-tracing.ts once its SDK is registered, and only then. */
export function markTracingOn(): void {
  on = true;
}

let cachedTracer: Tracer | undefined;
function tracer(): Tracer {
  return (cachedTracer ??= trace.getTracer('stripe-inbox', SERVICE_VERSION));
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span's context as a W3C traceparent header value. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

/** The active span's traceparent; null with none (or tracing off). */
export function activeTraceparent(): string | null {
  const span = trace.getActiveSpan();
  return span ? traceparentOf(span) : null;
}

/** A stored traceparent's context; undefined for null or anything that is not a valid one. */
export function spanContextOf(traceparent: string | null | undefined): SpanContext | undefined {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return undefined;
  const spanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** Links to each valid stored context, each once. */
export function linksTo(traceparents: Iterable<string | null | undefined>): Link[] {
  const links = new Map<string, Link>();
  for (const traceparent of traceparents) {
    const spanContext = spanContextOf(traceparent);
    if (spanContext && !links.has(traceparent!)) links.set(traceparent!, { context: spanContext });
  }
  return [...links.values()];
}

const linked = new WeakMap<Span, Set<string>>();

/**
 * Links the active span to each stored context it is not linked to yet: a fulfilment that runs its
 * events again one by one (fulfil-event.ts) reads their rows again.
 */
export function linkActiveSpan(traceparents: ReadonlyArray<string | null>): void {
  const span = trace.getActiveSpan();
  if (!span) return;
  const seen = linked.get(span) ?? new Set<string>();
  linked.set(span, seen);
  const fresh = traceparents.filter((traceparent): traceparent is string => traceparent !== null && !seen.has(traceparent));
  span.addLinks(linksTo(fresh));
  for (const traceparent of fresh) seen.add(traceparent);
}

/** Starts a span that is not made active (the webhook's, ended when its answer is written). */
export function startSpan(name: string, options: SpanOptions, parent?: SpanContext): Span {
  const parentContext = parent ? trace.setSpanContext(context.active(), parent) : context.active();
  return tracer().startSpan(name, options, parentContext);
}

/**
 * Runs `work` inside a new active span (so that spans and log lines within it are its children),
 * which ends when it settles: an error sets the span's status and is rethrown unchanged.
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>, parent?: SpanContext): Promise<T> {
  const parentContext = parent ? trace.setSpanContext(context.active(), parent) : context.active();
  return tracer().startActiveSpan(name, options, parentContext, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Marks the span failed with the error: its type and message, never a payload. */
export function failSpan(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** The active span's trace and span ids, for a log line (src/logger.ts); empty outside a span. */
export function traceIdsOfActiveSpan(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
