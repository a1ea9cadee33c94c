// Starts graphile-worker with the tasks the rest declare: fulfilment's (tasks/), the maintenance
// services' with their crontab lines (src/sweep/, src/prune/, src/notifications/reclaim.ts,
// src/reconcile/), the modules'; and beside them the pump that delivers outcome notifications
// (src/notifications/). Signal handling is ours (main.ts): graphile-worker would otherwise install
// its own SIGTERM handlers and race our graceful shutdown.
import { run, type Runner, type RunnerOptions, type Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type Stripe from 'stripe';
import { processStripeEventsTask } from '../tasks/process_stripe_event.js';
import type { BusinessModule, Handlers, TaskContext } from './module-contract.js';
import type { Config } from './config.js';
import type { Database } from './db/schema.js';
import { createDispatch } from './fulfilment/dispatch.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics/metrics.js';
import { startDeliveryPump, type DeliveryPump } from './notifications/delivery-pump.js';
import { createOutbox } from './notifications/outbox.js';
import { reclaimTask } from './notifications/reclaim.js';
import type { StripeCalls } from './stripe/stripe-calls.js';
import { pruneTask } from './prune/prune-events.js';
import { checkDatabaseIdentity, identityTask } from './reconcile/database-identity.js';
import { reconcileTask } from './reconcile/reconcile-events.js';
import { sweepTask } from './sweep/sweep-stale-events.js';
import { graphileLogger } from './worker/graphile-logger.js';
import { JobLoopWatchdog, type JobLoopStatus } from './worker/job-loop-watchdog.js';
import { PROCESS_EVENT_TASK } from './worker/job-queue.js';
import { FulfilmentBatcher } from './fulfilment/fulfilment-batcher.js';
import { thinFetcher } from './fulfilment/thin-fetch.js';
import { CallRate } from './stripe/call-rate.js';

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

/** The service's graphile-worker runners, started and stopped together. */
export interface Worker {
  /** Settles when every runner has stopped; rejects with the first failure. */
  readonly promise: Promise<void>;
  stop(): Promise<void>;
  /** Fails the jobs still running back to the queue and stops. */
  kill(reason: string): Promise<void>;
  /** Each runner's job loop: how long since it made progress, and whether it is stalled. */
  status(): Partial<Record<RunnerName, JobLoopStatus>>;
}

export type RunnerName = 'fulfilment' | 'modules' | 'notifications';

/** A maintenance service's task, as the service declares it beside its code. */
interface MaintenanceTask {
  /** graphile-worker's task identifier, stored in every queued job. */
  readonly identifier: string;
  /** Its line of the crontab. */
  crontab(config: Config): string;
  task(deps: { db: Kysely<Database>; stripe: Stripe; logger: Logger; metrics: Metrics; config: Config }): Task;
}

/**
 * Where one process both answers webhooks and fulfils them (ROLE=all), the answers go first: a
 * fulfilment transaction starts when no claim is in flight, or after this wait at the latest. In a
 * burst that keeps the 2xx fast — Stripe's deadline is on the answer, not on the credits — and jobs
 * gather meanwhile, so fulfilment catches up in larger, cheaper transactions. At a steady low rate
 * a claim is rarely in flight and the wait is a few milliseconds (docs/benchmarks.md, "What the
 * speed-only code buys").
 */
const GIVE_WAY_MAX_WAIT_MS = 100;

/** Run on the fulfilment runner's crontab. */
const MAINTENANCE_TASKS: readonly MaintenanceTask[] = [sweepTask, pruneTask, reclaimTask, reconcileTask, identityTask];

export interface WorkerOptions {
  /** For tests of a stall: the job loop's stall threshold (job-loop-watchdog.ts). */
  stallAfterMs?: number;
  /** For tests that must see new jobs arrive by LISTEN/NOTIFY alone: poll this rarely. */
  pollIntervalMs?: number;
  /** For tests of throttling: the notifications' backoff (delivery-pump.ts). */
  notificationRetryDelayMs?: (attempt: number) => number;
}

// Runners that each fetch only their own tasks. Fulfilment calls Stripe only to fetch a thin
// notification's object, outside its transaction; the modules' jobs call it (a subscription
// refresh), and while Stripe hangs each attempt holds its slot for the whole Stripe deadline. In their own MODULE_JOB_CONCURRENCY slots they wait for each other only, never
// in front of an event's fulfilment. Notification deliveries wait on the app the same way, in
// APP_WEBHOOK_CONCURRENCY batches of their own pump (not a graphile-worker runner:
// src/notifications/delivery-pump.ts says why), on a pool of their own.
export async function startWorker(deps: WorkerDeps, options: WorkerOptions = {}): Promise<Worker> {
  const { config, stripeCalls, pool, db, notificationDb, modules, handlers, logger, metrics, intake } = deps;
  const notifications = createOutbox(config);
  let pump: DeliveryPump | undefined;
  const { workerConcurrency: concurrency, maxAttempts, staleAfterMs } = config;
  const watchdogs: Partial<Record<RunnerName, JobLoopWatchdog>> = {};
  const runners: Runner[] = [];
  const start = async (name: RunnerName, runnerOptions: RunnerOptions) => {
    const watchdog = new JobLoopWatchdog(name, logger, options);
    watchdogs[name] = watchdog;
    const firstFetch = watchdog.firstFetch();
    firstFetch.catch(() => {}); // awaited below, once run() has returned
    const runner = await run({
      pgPool: pool,
      noHandleSignals: true,
      logger: graphileLogger(logger),
      // New jobs arrive by LISTEN/NOTIFY at once; polling only finds retries whose backoff ended
      // (and new jobs while LISTEN reconnects).
      pollInterval: options.pollIntervalMs ?? 2_000,
      events: watchdog.events,
      ...runnerOptions,
    });
    runners.push(runner);
    void runner.promise.finally(() => watchdog.stop()).catch(() => {});
    await firstFetch;
    return watchdog;
  };
  try {
    // A job carries the events claimed together (src/worker/job-queue.ts), and the jobs running at
    // once are fulfilled in one transaction (src/fulfilment/fulfilment-batcher.ts): a backlog
    // pays its round trips once for several jobs.
    const dispatch = createDispatch({ livemode: config.stripeLivemode, handlers });
    const fetchThin = thinFetcher(stripeCalls, new CallRate(config.stripeFetchesPerSecond), config.stripeLivemode);
    const fulfilment = new FulfilmentBatcher(db, { maxAttempts, dispatch, fetchThin, maxJobs: concurrency, ...(intake && { giveWay: () => intake.whenIdle(GIVE_WAY_MAX_WAIT_MS) }) });
    const fulfilmentLoop = await start('fulfilment', {
      concurrency,
      preset: {
        worker: {
          // Fetch jobs for all slots in one query (docs/benchmarks.md, "What the speed-only code
          // buys"). The trade-off on a kill: jobs held in the local queue stay locked; their events
          // are still 'processing' and the sweep reclaims them once the lock is older than
          // STALE_AFTER_SECONDS, so jobs must not sit in the local queue that long (ttl). Batched
          // completion is off: with it, a database that goes away while a batch of failures is
          // written ends graphile-worker's worker pool (test/database-outage.test.ts holds it).
          localQueue: { size: concurrency + 1, ttl: Math.min(60_000, staleAfterMs / 2) },
        },
      },
      crontab: MAINTENANCE_TASKS.map((service) => `${service.crontab(config)}\n`).join(''),
      taskList: {
        [PROCESS_EVENT_TASK]: processStripeEventsTask({ fulfilment, logger: logger.child({ task: PROCESS_EVENT_TASK }), metrics }),
        ...Object.fromEntries(
          MAINTENANCE_TASKS.map((service) => [service.identifier, service.task({ db, stripe: stripeCalls.stripe, logger: logger.child({ task: service.identifier }), metrics, config })]),
        ),
      },
    });
    // A failover or restore while no worker ran is noticed here; one while running, when
    // graphile-worker's LISTEN connection comes back after an error (a failover ends every
    // connection), else at the next SWEEP_CRON tick. Not fatal: the next tick checks again.
    const identityLogger = logger.child({ task: identityTask.identifier });
    const checkIdentity = (when: string) =>
      checkDatabaseIdentity(db, { reconcile: reconcileTask.runs(config), logger: identityLogger }).catch((error: unknown) =>
        identityLogger.error({ err: error }, `checking the database's identity ${when} failed; the next SWEEP_CRON tick checks again`),
      );
    await checkIdentity('at start-up');
    let listenLost = false;
    fulfilmentLoop.events.on('pool:listen:error', () => (listenLost = true));
    fulfilmentLoop.events.on('pool:listen:success', () => {
      if (!listenLost) return;
      listenLost = false;
      void checkIdentity('after LISTEN reconnected');
    });
    const tasks = moduleTasks(modules, { config, db, stripeCalls, logger, notifications });
    if (Object.keys(tasks).length > 0) await start('modules', { concurrency: config.moduleJobConcurrency, taskList: tasks });
    // Unset APP_WEBHOOK_URL writes no notification, and leaves any queued before it waiting.
    if (notifications.enabled) {
      pump = startDeliveryPump({
        db: notificationDb,
        config,
        logger: logger.child({ task: 'deliver_notifications' }),
        observe: metrics.notificationAttempts,
        givesWayTo: intake ? [fulfilment, intake] : [fulfilment],
        stallAfterMs: options.stallAfterMs,
        ...(options.notificationRetryDelayMs && { retryDelayMs: options.notificationRetryDelayMs }),
      });
    }
  } catch (error) {
    await Promise.allSettled(runners.map((runner) => runner.stop()));
    for (const watchdog of Object.values(watchdogs)) watchdog.stop();
    throw error;
  }
  const stopPump = async () => pump?.stop();
  return {
    promise: Promise.all([...runners.map((runner) => runner.promise), pump?.promise]).then(() => undefined),
    // A runner that already failed rejects these with its failure, which `promise` reports.
    async stop() {
      await Promise.allSettled([...runners.map((runner) => runner.stop()), stopPump()]);
    },
    // Deliveries in flight end with their timeout; killed before, their leases run out (reclaim.ts).
    async kill(reason) {
      await Promise.allSettled([...runners.map((runner) => runner.kill(reason)), stopPump()]);
    },
    status() {
      return {
        ...Object.fromEntries(Object.entries(watchdogs).map(([name, watchdog]) => [name, watchdog.status()])),
        ...(pump && { notifications: pump.status() }),
      };
    },
  };
}

function moduleTasks(modules: readonly BusinessModule[], context: TaskContext): Record<string, Task> {
  const tasks: Record<string, Task> = {};
  for (const module of modules) {
    for (const [name, task] of Object.entries(module.tasks?.({ ...context, logger: context.logger.child({ module: module.name }) }) ?? {})) {
      // A module's task name is stored in its queued jobs: a prefix keeps two modules from sharing one.
      if (!name.startsWith(`${module.name}_`)) throw new Error(`task ${name} of module ${module.name} must start with "${module.name}_"`);
      tasks[name] = task;
    }
  }
  return tasks;
}
