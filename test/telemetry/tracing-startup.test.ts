// Whether tracing starts, and what it loads: with none of OpenTelemetry's variables set, not one
// SDK module is loaded (the service imports @opentelemetry/api only); with an OTLP endpoint set,
// spans arrive at it as OTLP/HTTP JSON. Each case runs in a child process, whose module graph and
// environment are its own (the SDK's exporter reads OTEL_EXPORTER_OTLP_* itself).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { tracingWanted, type TracingConfig } from '../../src/tracing/start-tracing.js';

// Records every module the child resolves (import and require), imports the service and the test
// configuration, starts tracing as main.ts does, makes one span, and prints what it saw.
const CHILD = `
import { registerHooks } from 'node:module';
const resolved = new Set();
registerHooks({ resolve: (specifier, context, next) => { const result = next(specifier, context); resolved.add(result.url); return result; } });
await import('./src/service.ts');
const { testConfig } = await import('./test/support/service.ts');
const { startTracing } = await import('./src/tracing/start-tracing.ts');
const { inSpan } = await import('./src/tracing/trace-context.ts');
const otel = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_')));
const tracing = await startTracing(testConfig(otel));
await inSpan('startup probe', {}, async () => {});
await tracing?.shutdown();
const sdk = [...resolved].filter((url) => /@opentelemetry\\/(?!api\\/)/.test(url));
process.stdout.write(JSON.stringify({ started: tracing !== undefined, sdk: sdk.length }));
`;

async function child(env: Record<string, string>): Promise<{ started: boolean; sdk: number }> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
    env: { ...inherited, ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as { started: boolean; sdk: number };
}

describe('tracing off', () => {
  test('with no OpenTelemetry variable set, no SDK module is loaded', async () => {
    assert.deepEqual(await child({}), { started: false, sdk: 0 });
  });

  test('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none keep it off; an endpoint or an exporter turns it on', () => {
    const base: TracingConfig = {
      otelSdkDisabled: false,
      otelTracesExporter: undefined,
      otelExporterOtlpEndpoint: undefined,
      otelExporterOtlpTracesEndpoint: undefined,
      otelServiceName: 'stripe-inbox',
    };
    const endpoint = 'http://collector:4318';
    assert.equal(tracingWanted(base), false);
    assert.equal(tracingWanted({ ...base, otelExporterOtlpEndpoint: endpoint }), true);
    assert.equal(tracingWanted({ ...base, otelExporterOtlpTracesEndpoint: `${endpoint}/v1/traces` }), true);
    assert.equal(tracingWanted({ ...base, otelTracesExporter: 'otlp' }), true);
    assert.equal(tracingWanted({ ...base, otelTracesExporter: 'none', otelExporterOtlpEndpoint: endpoint }), false);
    assert.equal(tracingWanted({ ...base, otelSdkDisabled: true, otelExporterOtlpEndpoint: endpoint }), false);
  });
});

describe('tracing on, exporting to an OTLP/HTTP receiver', () => {
  test('the spans arrive at OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces as JSON, with the service name and resource attributes', async () => {
    const exports: Array<{ path: string | undefined; contentType: string | undefined; body: string }> = [];
    const receiver = createServer(async (req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      exports.push({ path: req.url, contentType: req.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    try {
      const { port } = receiver.address() as AddressInfo;
      const result = await child({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test' });
      assert.equal(result.started, true);
      assert.ok(result.sdk > 0, 'the SDK was loaded');
      assert.equal(exports.length, 1);
      assert.equal(exports[0]!.path, '/v1/traces');
      assert.equal(exports[0]!.contentType, 'application/json');
      const body = JSON.parse(exports[0]!.body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Array<{ name: string }> }>;
        }>;
      };
      const [resourceSpans] = body.resourceSpans;
      const attribute = (key: string) => resourceSpans!.resource.attributes.find((a) => a.key === key)?.value.stringValue;
      assert.equal(attribute('service.name'), 'stripe-inbox');
      assert.equal(attribute('deployment.environment.name'), 'test');
      assert.deepEqual(
        resourceSpans!.scopeSpans.flatMap((scope) => scope.spans.map((span) => span.name)),
        ['startup probe'],
      );
    } finally {
      receiver.close();
    }
  });
});
