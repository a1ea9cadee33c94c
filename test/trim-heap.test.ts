// The service hands V8's young generation back when it has nothing to do: at start, and after a
// busy spell once it has been quiet. Run in a child process: it needs --expose-gc and a heap of
// its own.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MB = 2 ** 20;
const TRIM_HEAP = new URL('../src/trim-heap.ts', import.meta.url).href;

/** Runs `body` after `startHeapTrimming(options)` in a node with these flags; returns what it printed, as JSON. */
async function inChild(flags: string[], options: string, body: string): Promise<Record<string, unknown>> {
  const script = `
    import v8 from 'node:v8';
    import { startHeapTrimming } from ${JSON.stringify(TRIM_HEAP)};
    const young = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').physical_space_size;
    const started = startHeapTrimming(${options});
    ${body}`;
  const { stdout } = await run(process.execPath, [...flags, '--max-semi-space-size=8', '--import', 'tsx', '--input-type=module', '-e', script]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

// Objects that survive a few scavenges, as requests in flight do: V8 grows the young generation.
const BUSY_SPELL = `
    let kept = [];
    for (const until = Date.now() + 1_000; Date.now() < until; ) {
      kept.push({ at: Date.now(), payload: 'x'.repeat(64 + (kept.length % 64)) });
      if (kept.length > 50_000) kept = [];
    }
    kept = undefined;`;

test('with --expose-gc it trims at start, and again once the process goes quiet after a busy spell', async () => {
  const result = await inChild(
    ['--expose-gc'],
    '{ intervalMs: 100 }',
    `
    const atStart = young();
    ${BUSY_SPELL}
    const afterBusy = young();
    let quiet = afterBusy;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && quiet >= ${MB}; quiet = young()) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.stdout.write(JSON.stringify({ started, atStart, afterBusy, quiet }));`,
  );
  assert.equal(result.started, true);
  assert.ok(Number(result.atStart) < MB, `young generation at start: ${Number(result.atStart) / MB} MB`);
  assert.ok(Number(result.afterBusy) >= 4 * MB, `the busy spell grew it: ${Number(result.afterBusy) / MB} MB`);
  assert.ok(Number(result.quiet) < MB, `quiet again, it was handed back: ${Number(result.quiet) / MB} MB`);
});

test('without --expose-gc it does nothing and says so', async () => {
  const result = await inChild([], '', `process.stdout.write(JSON.stringify({ started, gc: typeof globalThis.gc }));`);
  assert.deepEqual(result, { started: false, gc: 'undefined' });
});
