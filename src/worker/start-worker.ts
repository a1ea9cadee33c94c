// The worker, assembled from a few starters, as River starts its services from one client: the
// fulfilment runner with the maintenance services on its crontab (fulfilment-runner.ts,
// src/worker/maintainer.ts), the modules' runner (module-jobs-runner.ts) and the pump that
// delivers outcome notifications (notification-pump.ts), and the modules' own outbox pumps
// (module-pumps.ts). Each runner fetches only its own tasks,
// so a slow Stripe or a slow app holds the slots of the work that waits on it, never fulfilment's.
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import type { Handlers } from '../module-contract.js';
import type { Logger } from '../logger.js';
import { maintainer } from './maintainer.js';
import type { Metrics } from '../metrics/metrics.js';
import type { BusinessModule } from '../module-contract.js';
import type { DeliveryPump } from '../notifications/delivery-pump.js';
import { createOutbox } from '../notifications/outbox.js';
import type { StripeCalls } from '../stripe/stripe-calls.js';
import { startFulfilmentRunner } from './fulfilment-runner.js';
import type { JobLoopStatus } from '../queue/job-loop-watchdog.js';
import { startModuleJobsRunner } from './module-jobs-runner.js';
import { startModulePumps, type ModulePumps } from './module-pumps.js';
import { startNotificationPump } from './notification-pump.js';
import { Runners, type RunnerName, type RunnersOptions } from './runners.js';

export interface WorkerDeps {
  config: Config;
  /** For the modules' tasks, and fulfilment's fetches for thin notifications (src/fulfilment/thin-fetch.ts). */
  stripeCalls: StripeCalls;
  /** The worker pool: graphile-worker's own queries and our fulfilment share it. */
  pool: pg.Pool;
  db: Kysely<Database>;
  /** The deliveries' own pool: an app that answers slowly never holds a fulfilment connection. */
  notificationDb: Kysely<Database>;
  modules: readonly BusinessModule[];
  /** The modules' handlers, built once by the service (its claims read them too: finish-at-intake.ts). */
  handlers: readonly Handlers[];
  logger: Logger;
  metrics: Metrics;
  /** Where this process also answers webhooks (ROLE=all): their claims, which its own work gives way to. */
  intake?: { whenIdle(maxWaitMs: number): Promise<void>; busyShare(): number };
}

/** The service's graphile-worker runners and its notification pump, started and stopped together. */
export interface Worker {
  /** Settles when every runner has stopped; rejects with the first failure. */
  readonly promise: Promise<void>;
  stop(): Promise<void>;
  /** Fails the jobs still running back to the queue and stops. */
  kill(reason: string): Promise<void>;
  /** Each runner's job loop: how long since it made progress, and whether it is stalled. */
  status(): Partial<Record<RunnerName, JobLoopStatus>>;
}

export interface WorkerOptions extends RunnersOptions {
  /** For tests of throttling: the notifications' backoff (delivery-pump.ts). */
  notificationRetryDelayMs?: (attempt: number) => number;
}

export async function startWorker(deps: WorkerDeps, options: WorkerOptions = {}): Promise<Worker> {
  const { config, stripeCalls, pool, db, notificationDb, modules, handlers, logger, metrics, intake } = deps;
  const notifications = createOutbox(config);
  const runners = new Runners(pool, logger, options);
  let pump: DeliveryPump | undefined;
  let modulePumps: ModulePumps | undefined;
  try {
    const maintenance = maintainer(config, { db, stripe: stripeCalls.stripe, logger, metrics, modules });
    const { fulfilment, loop } = await startFulfilmentRunner(runners, { config, stripeCalls, db, handlers, logger, metrics, intake, maintenance });
    await maintenance.start(loop.events);
    const moduleContext = { config, db, stripeCalls, logger, notifications };
    await startModuleJobsRunner(runners, { modules, context: moduleContext, concurrency: config.moduleJobConcurrency });
    modulePumps = startModulePumps(modules, moduleContext);
    const givesWayTo = intake ? [fulfilment, intake] : [fulfilment];
    pump = startNotificationPump({
      db: notificationDb,
      config,
      notifications,
      logger,
      metrics,
      givesWayTo,
      stallAfterMs: options.stallAfterMs,
      retryDelayMs: options.notificationRetryDelayMs,
    });
  } catch (error) {
    await Promise.allSettled([runners.abandon(), modulePumps?.stop()]);
    throw error;
  }
  const stopPump = async () => Promise.all([pump?.stop(), modulePumps?.stop()]);
  return {
    promise: Promise.all([...runners.promises(), pump?.promise, modulePumps.promise]).then(() => undefined),
    // A runner that already failed rejects these with its failure, which `promise` reports.
    async stop() {
      await Promise.allSettled([runners.stop(), stopPump()]);
    },
    // Deliveries in flight end with their timeout; killed before, their leases run out
    // (src/maintenance/lease-reclaim.ts).
    async kill(reason) {
      await Promise.allSettled([runners.kill(reason), stopPump()]);
    },
    status() {
      return { ...runners.status(), ...(pump && { notifications: pump.status() }) };
    },
  };
}
