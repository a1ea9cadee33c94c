// The service's code leaves Node's bundled undici (fetch, WebSocket) and http2 unloaded: the
// service calls neither, and together they hold several MB of resident memory in every process.
// An ES module import of node:http, ours or a library's, loads both (src/stripe/sdk.ts says why).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

const SRC = new URL('../../src/', import.meta.url);
/** Every module the service can load: src/ but its entry (which would start it) and the development stand-ins. */
const serviceModules = () =>
  readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && file !== 'main.ts' && !file.startsWith('dev/'))
    .map((file) => new URL(file, SRC).href);

test("importing every module of the service loads neither Node's undici nor http2", async () => {
  const modules = serviceModules();
  assert.ok(modules.length > 50, `found ${modules.length} modules under src/`);
  const script = `for (const m of ${JSON.stringify(modules)}) await import(m);
    process.stdout.write(JSON.stringify(process.moduleLoadList));`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { maxBuffer: 16 * 1024 * 1024 });
  const loaded = JSON.parse(stdout) as string[];
  assert.ok(loaded.includes('NativeModule crypto'), 'the list names the built-ins the modules loaded');
  assert.deepEqual(
    loaded.filter((name) => /\b(?:undici|http2)\b/.test(name)),
    [],
  );
});
