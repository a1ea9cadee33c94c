// graphile-worker task `prune_events`: the daily retention run (src/maintenance/prune.ts), which
// prunes every table with the events' cutoff. No payload.
import type { Task } from 'graphile-worker';
import type { Config } from '../src/config.js';
import type { MaintenanceTaskDeps } from '../src/maintenance/maintenance-service.js';
import { pruneEvents, pruneService } from '../src/maintenance/prune.js';

type Deps = Pick<MaintenanceTaskDeps, 'db' | 'logger' | 'modules'> & { config: Pick<Config, 'eventRetentionDays'> };

export const pruneTask = {
  ...pruneService,
  task:
    ({ db, logger, config, modules }: Deps): Task =>
    async () => {
      await pruneEvents(db, { retentionDays: config.eventRetentionDays, logger, modules });
    },
};
