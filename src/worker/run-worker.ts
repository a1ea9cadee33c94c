// Starts graphile-worker with our task list. Signal handling is ours (main.ts): graphile-worker
// would otherwise install its own SIGTERM handlers and race our graceful shutdown.
import { run, type Runner } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { processStripeEvent } from '../../tasks/process_stripe_event.js';
import type { Database } from '../db/schema.js';
import { PROCESS_EVENT_TASK } from '../events/enqueue.js';
import type { Logger } from '../logger.js';
import { graphileLogger } from './graphile-logger.js';

export interface WorkerDeps {
  pool: pg.Pool;
  db: Kysely<Database>;
  logger: Logger;
  concurrency: number;
  maxAttempts: number;
}

export async function startWorker({ pool, db, logger, concurrency, maxAttempts }: WorkerDeps): Promise<Runner> {
  return run({
    pgPool: pool,
    concurrency,
    noHandleSignals: true,
    logger: graphileLogger(logger),
    // New jobs arrive by LISTEN/NOTIFY at once; polling only finds retries whose backoff ended.
    pollInterval: 2_000,
    crontab: '',
    taskList: {
      [PROCESS_EVENT_TASK]: processStripeEvent({ db, logger: logger.child({ task: PROCESS_EVENT_TASK }), maxAttempts }),
    },
  });
}
