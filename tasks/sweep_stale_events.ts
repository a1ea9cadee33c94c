// graphile-worker task `sweep_stale_events`, run by the crontab every SWEEP_CRON tick. The
// crontab guarantees one run per tick across all worker containers; running more would still be
// safe (SKIP LOCKED), just wasted.
import type { Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/metrics/metrics.js';
import { sweepStaleEvents } from '../src/sweep/sweep-stale-events.js';

export interface SweepTaskDeps {
  db: Kysely<Database>;
  logger: Logger;
  staleAfterMs: number;
  maxAttempts: number;
  metrics: Metrics;
}

export function sweepStaleEventsTask({ db, logger, staleAfterMs, maxAttempts, metrics }: SweepTaskDeps): Task {
  return async () => {
    await sweepStaleEvents(db, { staleAfterMs, maxAttempts, logger, metrics });
  };
}
