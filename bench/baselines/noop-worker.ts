// Baseline for `npm run bench -- drain`: bare graphile-worker draining a backlog of `noop` jobs
// that do nothing. Same concurrency (CONCURRENCY) and pool size (POOL_SIZE) as the service's
// worker, and the same run() options as src/worker/fulfilment-runner.ts, minus our tasks and
// crontab.
// graphile-worker's per-job info lines are dropped, as the service sends them to debug.
import { Logger, run } from 'graphile-worker';
import pg from 'pg';
import { announceReady, exitWithParent, requiredEnvNumber } from '../support/announce.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: requiredEnvNumber('POOL_SIZE', 15) });
pool.on('error', () => {});
const concurrency = requiredEnvNumber('CONCURRENCY', 10);
const runner = await run({
  pgPool: pool,
  concurrency,
  noHandleSignals: true,
  pollInterval: 2_000,
  preset: { worker: { localQueue: { size: concurrency + 1, ttl: 60_000 } } },
  logger: new Logger(() => (level, message) => {
    if (['error', 'warning'].includes(String(level))) process.stderr.write(`${message}\n`);
  }),
  taskList: { noop: async () => {} },
});
announceReady();
exitWithParent(async () => {
  await runner.stop();
  await pool.end();
});
