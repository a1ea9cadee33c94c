// graphile-worker task `reclaim_notification_deliveries`: frees the deliveries whose worker died
// mid-attempt (src/maintenance/lease-reclaim.ts), on SWEEP_CRON's ticks. No payload.
import type { Task } from 'graphile-worker';
import type { Config } from '../src/config.js';
import { leaseReclaimService, reclaimLeases } from '../src/maintenance/lease-reclaim.js';
import type { MaintenanceTaskDeps } from '../src/maintenance/maintenance-service.js';

type Deps = Pick<MaintenanceTaskDeps, 'db' | 'logger'> & { config: Pick<Config, 'appWebhookMaxAttempts'> };

export const reclaimTask = {
  ...leaseReclaimService,
  task:
    ({ db, logger, config }: Deps): Task =>
    async () => {
      await reclaimLeases(db, { maxAttempts: config.appWebhookMaxAttempts, logger });
    },
};
