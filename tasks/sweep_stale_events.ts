// graphile-worker task `sweep_stale_events`: the backstop sweep (src/maintenance/sweep.ts), on
// SWEEP_CRON's ticks and as the one-off job queueSweepSoon() adds after a failover.
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import type { Config } from '../src/config.js';
import type { MaintenanceTaskDeps } from '../src/maintenance/maintenance-service.js';
import { sweepService, sweepStaleEvents } from '../src/maintenance/sweep.js';

/** The payload of a sweep queued by queueSweepSoon(); the crontab's jobs carry none of it. */
const soonPayload = z.object({ staleAfterSeconds: z.number().int().positive() });

type Deps = Pick<MaintenanceTaskDeps, 'db' | 'logger'> & {
  metrics: Pick<MaintenanceTaskDeps['metrics'], 'sweepReclaims'>;
  config: Pick<Config, 'staleAfterMs' | 'maxAttempts'>;
};

export const sweepTask = {
  ...sweepService,
  task:
    ({ db, logger, metrics, config }: Deps): Task =>
    async (payload) => {
      const soon = soonPayload.safeParse(payload);
      const staleAfterMs = soon.success ? soon.data.staleAfterSeconds * 1000 : config.staleAfterMs;
      await sweepStaleEvents(db, { staleAfterMs, maxAttempts: config.maxAttempts, logger, metrics });
    },
};
