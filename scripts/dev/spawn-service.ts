// The service as a real child process (`node --expose-gc --import tsx src/main.ts`, as `npm start`
// runs it, or the compiled bundle), for what only a process can show: SIGKILL mid-job, SIGTERM and
// its exit code, several processes on one database. Used by the process-level tests
// (test/support/child-service.ts), by `npm run chaos` and by the benchmarks (which run the
// compiled bundle, as the image does).
// The URL is learned from the JSON start line, so the child must log at 'info' or lower
// (the default here); PORT defaults to 0, a free port chosen by the kernel.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
// Only the end of stderr is kept for the error message: a long-running child may write a lot.
const STDERR_TAIL_CHARS = 8_192;

export interface ChildService {
  readonly process: ChildProcess;
  readonly url: string;
  /** Every log line the process wrote (or those `keepLog` accepts), parsed. */
  readonly logs: Array<Record<string, unknown>>;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  readonly exited: Promise<number | string>;
}

export interface SpawnOptions {
  /** Which parsed log lines to keep in `logs`; all of them by default. */
  keepLog?: (entry: Record<string, unknown>) => boolean;
  /** The child is killed and the spawn rejected if it has not started by then; default 60 s. */
  startTimeoutMs?: number;
  /** Aborting before the child has started kills it and rejects the spawn. */
  signal?: AbortSignal;
  /** A compiled main.js (`npm run build`) to run with plain node instead of src/main.ts under tsx. */
  compiledMain?: string;
  /** Flags for node itself, for those NODE_OPTIONS refuses (--optimize-for-size, say). */
  nodeFlags?: readonly string[];
}

/** Starts src/main.ts with the parent's environment plus `env`, and resolves once it listens. */
export async function spawnService(env: Record<string, string>, options: SpawnOptions = {}): Promise<ChildService> {
  const args = [...(options.nodeFlags ?? []), ...(options.compiledMain ? [options.compiledMain] : ['--expose-gc', '--import', 'tsx', MAIN])];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, LOG_LEVEL: 'info', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL_CHARS)));
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  let timer: NodeJS.Timeout | undefined;
  const started = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (!options.keepLog || options.keepLog(entry)) logs.push(entry);
      if (entry.msg === 'stripe-inbox started') resolve(String(entry.url));
    });
    void exited.then((code) => reject(new Error(`service exited with ${code} before starting:\n${stderr}`)));
    timer = setTimeout(() => {
      reject(new Error(`service did not start within ${startTimeoutMs} ms:\n${stderr}`));
      child.kill('SIGKILL');
    }, startTimeoutMs);
    if (options.signal?.aborted) child.kill('SIGKILL');
    options.signal?.addEventListener('abort', onAbort);
  });
  function onAbort(): void {
    child.kill('SIGKILL');
  }
  try {
    const url = await started;
    return { process: child, url, logs, exited };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
