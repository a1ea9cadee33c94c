// While tracing is on, a log line written inside a span carries the span's trace_id and span_id
// (the logger's mixin, as src/main.ts creates it), and a line outside any span carries neither.
// Run through the real pino destination in a child process, as test/logger.test.ts does.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';

const CHILD = `
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { createLogger } from './src/logger.ts';
import { startTracing } from './src/tracing/start-tracing.ts';
import { inSpan, traceIdsOfActiveSpan } from './src/tracing/trace-context.ts';
const tracing = await startTracing(
  { otelSdkDisabled: false, otelTracesExporter: undefined, otelExporterOtlpEndpoint: undefined, otelExporterOtlpTracesEndpoint: undefined, otelServiceName: 'stripe-inbox' },
  { exporter: new InMemorySpanExporter() },
);
const logger = createLogger('info', { mixin: traceIdsOfActiveSpan });
logger.info('outside');
await inSpan('probe', {}, async (span) => logger.info({ expected: span.spanContext() }, 'inside'));
await tracing.shutdown();
`;

test('a line inside a span carries its trace_id and span_id; one outside carries neither', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD]);
  const [outside, inside] = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.equal(outside!.msg, 'outside');
  assert.equal('trace_id' in outside!, false);
  assert.equal('span_id' in outside!, false);
  const expected = inside!.expected as { traceId: string; spanId: string };
  assert.deepEqual({ trace_id: inside!.trace_id, span_id: inside!.span_id }, { trace_id: expected.traceId, span_id: expected.spanId });
});
