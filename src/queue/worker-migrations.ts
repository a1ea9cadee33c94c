// graphile-worker's own migrations (its graphile_worker schema), with its log lines in ours:
// migrate() (src/db/migrate.ts) runs them after ours, under the same advisory lock.
import { runMigrations } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from '../logger.js';
import { graphileLogger } from './graphile-logger.js';

export function runWorkerMigrations(pool: pg.Pool, logger: Logger): Promise<void> {
  return runMigrations({ pgPool: pool, logger: graphileLogger(logger) });
}
