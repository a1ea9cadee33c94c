// The service as a real child process, with the test secrets (see scripts/dev/spawn-service.ts, which
// `npm run chaos` shares): SIGKILL mid-job, SIGTERM and its exit code, two processes migrating at once.
import { after, before } from 'node:test';
import { spawnService as spawnServiceProcess, type ChildService } from '../../scripts/dev/spawn-service.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { ADMIN_TOKEN, API_TOKEN, PREVIOUS_WEBHOOK_SECRET, STRIPE_SECRET_KEY, WEBHOOK_SECRET } from './service.js';

export type { ChildService };

export async function spawnService(databaseUrl: string, env: Record<string, string> = {}): Promise<ChildService> {
  return spawnServiceProcess({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    STRIPE_WEBHOOK_SECRET: `${WEBHOOK_SECRET},${PREVIOUS_WEBHOOK_SECRET}`,
    // Nothing in these tests calls Stripe; a closed port makes any call fail fast.
    STRIPE_SECRET_KEY,
    STRIPE_API_BASE: 'http://127.0.0.1:9',
    API_TOKEN,
    ADMIN_TOKEN,
    PORT: '0',
    LOG_LEVEL: 'info',
    SHUTDOWN_TIMEOUT_SECONDS: '5',
    ...env,
  });
}

export interface FileProcesses {
  readonly database: TestDatabase;
  /** Starts a service process on the file's database; every one is killed after the file. */
  start(env?: Record<string, string>): Promise<ChildService>;
}

/** A fresh database for one test file, and service processes on it with `defaults` in their env. */
export function processesForFile(defaults: Record<string, string> = {}): FileProcesses {
  const children: ChildService[] = [];
  const file = {
    database: undefined as unknown as TestDatabase,
    async start(env: Record<string, string> = {}) {
      const child = await spawnService(file.database.url, { ...defaults, ...env });
      children.push(child);
      return child;
    },
  };
  before(async () => {
    file.database = await createTestDatabase();
  });
  after(async () => {
    for (const child of children) child.process.kill('SIGKILL');
    await file.database?.close();
  });
  return file;
}
