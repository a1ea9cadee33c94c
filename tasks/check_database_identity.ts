// graphile-worker task `check_database_identity`: notices a failover or a restore and queues a
// reconcile and a sweep (src/maintenance/database-identity.ts), on SWEEP_CRON's ticks. No payload.
import type { Task } from 'graphile-worker';
import type { Config } from '../src/config.js';
import { checkDatabaseIdentity, databaseIdentityService } from '../src/maintenance/database-identity.js';
import type { MaintenanceTaskDeps } from '../src/maintenance/maintenance-service.js';
import { reconcileRuns } from '../src/maintenance/reconcile.js';

type Deps = Pick<MaintenanceTaskDeps, 'db' | 'logger'> & { config: Pick<Config, 'stripeSecretKey'> };

export const identityTask = {
  ...databaseIdentityService,
  task:
    ({ db, logger, config }: Deps): Task =>
    async () => {
      await checkDatabaseIdentity(db, { reconcile: reconcileRuns(config), logger });
    },
};
