// `npm run send-event` run as a developer runs it against `npm start`: a child process with the
// test service's database, webhook secret and API token, posting to the test service.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestDatabase } from './database.js';
import { API_TOKEN, WEBHOOK_SECRET, type TestService } from './service.js';

const run = promisify(execFile);

/** The environment send-event runs with: the test database, the service's webhook secret and API token. */
export function sendEventEnv(database: TestDatabase): NodeJS.ProcessEnv {
  return { ...process.env, NODE_ENV: 'test', DATABASE_URL: database.url, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, API_TOKEN, LOG_LEVEL: 'silent' };
}

/** Runs send-event with `args` against the file's service; rejects when it exits non-zero. */
export async function sendEvent(file: { database: TestDatabase; service: TestService }, args: string[]): Promise<void> {
  await run(process.execPath, ['--import', 'tsx', 'scripts/send-event.ts', ...args, '--url', file.service.url], { env: sendEventEnv(file.database) });
}
