// Turns tracing on when OpenTelemetry's standard variables ask for it, and only then loads the SDK
// (a dynamic import of tracing-sdk.ts): with tracing off, not one SDK module is loaded and the
// code paths check tracingOn() and nothing else (test/telemetry/tracing-startup.test.ts).
import { markTracingOn } from './trace-context.js';
// Type-only imports: erased, they load nothing.
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { Tracing } from './tracing-sdk.js';

/** The settings (src/config/settings.ts) that decide whether tracing is on; the SDK reads the rest itself. */
export interface TracingConfig {
  readonly otelSdkDisabled: boolean;
  readonly otelTracesExporter?: 'otlp' | 'console' | 'none' | undefined;
  readonly otelExporterOtlpEndpoint?: string | undefined;
  readonly otelExporterOtlpTracesEndpoint?: string | undefined;
  readonly otelServiceName: string;
}

/**
 * On when an OTLP endpoint is set or OTEL_TRACES_EXPORTER names an exporter; OTEL_SDK_DISABLED=true
 * and OTEL_TRACES_EXPORTER=none keep it off, as the specification has them.
 */
export function tracingWanted(config: TracingConfig): boolean {
  if (config.otelSdkDisabled) return false;
  if (config.otelTracesExporter !== undefined) return config.otelTracesExporter !== 'none';
  return config.otelExporterOtlpEndpoint !== undefined || config.otelExporterOtlpTracesEndpoint !== undefined;
}

/**
 * Starts the SDK when tracing is wanted; undefined, having loaded nothing, when not. `exporter`
 * replaces the one OTEL_TRACES_EXPORTER names (tests pass an in-memory one).
 */
export async function startTracing(config: TracingConfig, options: { exporter?: SpanExporter } = {}): Promise<Tracing | undefined> {
  if (!tracingWanted(config) && !options.exporter) return undefined;
  const { startTracingSdk } = await import('./tracing-sdk.js');
  const tracing = startTracingSdk({
    serviceName: config.otelServiceName,
    exporter: options.exporter ?? (config.otelTracesExporter === 'console' ? 'console' : 'otlp'),
  });
  markTracingOn();
  return tracing;
}
