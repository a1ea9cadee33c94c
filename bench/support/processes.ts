// Child processes of a bench run: the baselines (bench/baselines/*.ts) and the app the service
// notifies (bench/app/), which announce themselves with one JSON line `{"ready":true,"url"?:…}` on
// stdout, and the service itself, started by the shared scripts/dev/spawn-service.ts. Each is
// registered for cleanup and stopped with SIGTERM, then SIGKILL if it has not exited within
// STOP_GRACE_MS.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnService } from '../../scripts/dev/spawn-service.js';
import { onCleanup } from './cleanup.js';
import { COMPILED_MAIN } from './compiled-service.js';

const STOP_GRACE_MS = 10_000;
const START_TIMEOUT_MS = 60_000;
const STDERR_TAIL_CHARS = 4_096;

export interface BenchChild {
  /** The process that serves HTTP. */
  readonly pid: number;
  /** Every process of the server, that one first: CPU and memory are theirs together. */
  readonly pids: readonly number[];
  /** Set for HTTP servers. */
  readonly url: string;
  stop(): Promise<void>;
}

function stopper(child: ChildProcess, label: string): () => Promise<void> {
  const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit').then(() => {});
  return onCleanup(label, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  });
}

/** Starts bench/baselines/<name>.ts and resolves when it has announced itself. */
export function spawnBaseline(name: string, env: Record<string, string>): Promise<BenchChild> {
  return spawnAnnounced(new URL(`../baselines/${name}.ts`, import.meta.url), `baseline ${name}`, env);
}

/** Starts a TypeScript file of the bench under tsx and resolves when it has announced itself (support/announce.ts). */
export async function spawnAnnounced(script: URL, name: string, env: Record<string, string>): Promise<BenchChild> {
  const file = fileURLToPath(script);
  // stdin stays a pipe: the child exits when it closes, so it cannot outlive a killed bench.
  const child = spawn(process.execPath, ['--import', 'tsx', file], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const stop = stopper(child, name);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL_CHARS)));
  let timer: NodeJS.Timeout | undefined;
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        try {
          const entry = JSON.parse(line) as { ready?: boolean; url?: string };
          if (entry.ready === true) resolve(entry.url ?? '');
        } catch {
          // not an announcement
        }
      });
      child.once('exit', (code) => reject(new Error(`${name} exited with ${code} before it was ready:\n${stderr}`)));
      timer = setTimeout(() => reject(new Error(`${name} not ready within ${START_TIMEOUT_MS} ms:\n${stderr}`)), START_TIMEOUT_MS);
    });
    return { pid: child.pid!, pids: [child.pid!], url, stop };
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The compiled service (built by bench/run.ts first) with `env` on top of the bench's settings. */
export async function spawnBenchService(env: Record<string, string>, nodeFlags: readonly string[]): Promise<BenchChild> {
  // Nothing is kept: at LOG_LEVEL=info the webhook route logs one line per request.
  const service = await spawnService(env, { keepLog: () => false, startTimeoutMs: START_TIMEOUT_MS, compiledMain: COMPILED_MAIN, nodeFlags });
  const stop = stopper(service.process, 'service');
  return { pid: service.process.pid!, pids: [service.process.pid!], url: service.url, stop };
}

/**
 * The service as two processes on one database, as two containers of the image would run it:
 * ROLE=web answers, ROLE=worker fulfils. The web process is the server's URL.
 */
export async function spawnSplitService(env: (role: 'web' | 'worker') => Record<string, string>, nodeFlags: readonly string[]): Promise<BenchChild> {
  const web = await spawnBenchService(env('web'), nodeFlags);
  try {
    const worker = await spawnBenchService(env('worker'), nodeFlags);
    return { pid: web.pid, pids: [web.pid, worker.pid], url: web.url, stop: async () => void (await Promise.all([web.stop(), worker.stop()])) };
  } catch (error) {
    await web.stop();
    throw error;
  }
}
