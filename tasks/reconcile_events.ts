// graphile-worker task `reconcile_events`: claims what Stripe has and we lost
// (src/maintenance/reconcile.ts), on RECONCILE_CRON's ticks and as the job a changed database
// identity queues (src/maintenance/database-identity.ts). Its payload is empty.
import type { Task } from 'graphile-worker';
import type { Config } from '../src/config.js';
import type { MaintenanceTaskDeps } from '../src/maintenance/maintenance-service.js';
import { reconcileEvents, reconcileRuns, reconcileService } from '../src/maintenance/reconcile.js';
import { CallRate } from '../src/stripe/call-rate.js';

type Deps = Pick<MaintenanceTaskDeps, 'db' | 'stripe' | 'logger'> & {
  metrics: Pick<MaintenanceTaskDeps['metrics'], 'reconciledEvents'>;
  config: Pick<Config, 'stripeSecretKey' | 'reconcileWindowMs' | 'reconcileMaxCalls' | 'reconcileCallsPerSecond' | 'maxAttempts'>;
};

export const reconcileTask = {
  ...reconcileService,
  task: ({ db, stripe, logger, metrics, config }: Deps): Task => {
    if (!reconcileRuns(config)) logger.info('reconcile is off: STRIPE_SECRET_KEY is unset (development), so Stripe has no events of ours to list');
    // One pace for every run of this process, so two runs at once (a tick and a triggered one) share it.
    const callRate = new CallRate(config.reconcileCallsPerSecond);
    return async () => {
      await reconcileEvents(db, stripe, {
        // Every event, not only undelivered ones: an event lost with a failed-over database had its 2xx.
        since: new Date(Date.now() - config.reconcileWindowMs),
        maxAttempts: config.maxAttempts,
        maxCalls: config.reconcileMaxCalls,
        callRate,
        resume: true,
        logger,
        metrics,
      });
    };
  },
};
