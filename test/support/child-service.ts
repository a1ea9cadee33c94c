// The service as a real child process (`node src/main.ts`), for what only a process can show:
// SIGKILL mid-job, SIGTERM and its exit code, two processes migrating at once.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { ADMIN_TOKEN, API_TOKEN, PREVIOUS_WEBHOOK_SECRET, WEBHOOK_SECRET } from './service.js';

export interface ChildService {
  readonly process: ChildProcess;
  readonly url: string;
  /** Every log line the process wrote, parsed. */
  readonly logs: Array<Record<string, unknown>>;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  readonly exited: Promise<number | string>;
}

export async function spawnService(databaseUrl: string, env: Record<string, string> = {}): Promise<ChildService> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      STRIPE_WEBHOOK_SECRET: `${WEBHOOK_SECRET},${PREVIOUS_WEBHOOK_SECRET}`,
      // Nothing in these tests calls Stripe; a closed port makes any call fail fast.
      STRIPE_SECRET_KEY: 'sk_test_offline',
      STRIPE_API_BASE: 'http://127.0.0.1:9',
      API_TOKEN,
      ADMIN_TOKEN,
      PORT: '0',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_SECONDS: '5',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const started = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      if (entry.msg === 'stripe-inbox started') resolve(String(entry.url));
    });
    void exited.then((code) => reject(new Error(`service exited with ${code} before starting:\n${stderr}`)));
  });
  const url = await started;
  return { process: child, url, logs, exited };
}
