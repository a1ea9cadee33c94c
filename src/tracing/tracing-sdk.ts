// The OpenTelemetry SDK, loaded by start-tracing.ts only when tracing is on. The tracer provider,
// the OTLP/HTTP exporter (JSON) and the resource only: no auto-instrumentation, which would patch
// http, pg and express on every request whether or not a span is wanted, and no vendor agent. The
// spans are the service's own (docs/operations.md, "Tracing"). The exporter reads
// OTEL_EXPORTER_OTLP_* and the provider OTEL_TRACES_SAMPLER* from the environment themselves.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { SERVICE_VERSION } from '../version.js';

export interface Tracing {
  /** Exports what is buffered: a test's assertions read the exporter after it. */
  flush(): Promise<void>;
  /** Flushes and stops: the last closer of the graceful shutdown. */
  shutdown(): Promise<void>;
}

export function startTracingSdk({ serviceName, exporter }: { serviceName: string; exporter: SpanExporter | 'otlp' | 'console' }): Tracing {
  // OTEL_RESOURCE_ATTRIBUTES (read by envDetector) adds to these, and wins where both name a key.
  const resource = resourceFromAttributes({ 'service.name': serviceName, 'service.version': SERVICE_VERSION }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const spanExporter = exporter === 'otlp' ? new OTLPTraceExporter() : exporter === 'console' ? new ConsoleSpanExporter() : exporter;
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(spanExporter)] });
  // Sets the global provider and the AsyncLocalStorage context manager that active spans need.
  provider.register();
  return { flush: () => provider.forceFlush(), shutdown: () => provider.shutdown() };
}
