// The fulfilment runner: task `process_stripe_event` (tasks/process_stripe_event.ts), and on its
// crontab the maintenance services (src/worker/maintainer.ts). A job carries the events
// claimed together (job-queue.ts), and the jobs running at once are fulfilled in one transaction
// (src/fulfilment/fulfilment-batcher.ts): a backlog pays its round trips once for several jobs.
import type { TaskList } from 'graphile-worker';
import type { Kysely } from 'kysely';
import { processStripeEventsTask } from '../../tasks/process_stripe_event.js';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import { createDispatch } from '../fulfilment/dispatch.js';
import { FulfilmentBatcher } from '../fulfilment/fulfilment-batcher.js';
import type { Handlers } from '../module-contract.js';
import { thinFetcher } from '../fulfilment/thin-fetch.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { CallRate } from '../stripe/call-rate.js';
import type { StripeCalls } from '../stripe/stripe-calls.js';
import type { JobLoopWatchdog } from '../queue/job-loop-watchdog.js';
import { PROCESS_EVENT_TASK } from '../queue/job-queue.js';
import type { Runners } from './runners.js';

/**
 * Where one process both answers webhooks and fulfils them (ROLE=all), the answers go first: a
 * fulfilment transaction starts when no claim is in flight, or after this wait at the latest. In a
 * burst that keeps the 2xx fast — Stripe's deadline is on the answer, not on the credits — and jobs
 * gather meanwhile, so fulfilment catches up in larger, cheaper transactions. At a steady low rate
 * a claim is rarely in flight and the wait is a few milliseconds (docs/speed.md).
 */
const GIVE_WAY_MAX_WAIT_MS = 100;

export interface FulfilmentRunnerDeps {
  config: Pick<Config, 'workerConcurrency' | 'maxAttempts' | 'staleAfterMs' | 'stripeLivemode' | 'stripeFetchesPerSecond'>;
  /** For fulfilment's fetches for thin notifications (src/fulfilment/thin-fetch.ts). */
  stripeCalls: StripeCalls;
  /** The worker pool's. */
  db: Kysely<Database>;
  /** The modules' handlers, built once by the service (its claims read them too: finish-at-intake.ts). */
  handlers: readonly Handlers[];
  logger: Logger;
  metrics: Metrics;
  /** Where this process also answers webhooks (ROLE=all): their claims, which its own work gives way to. */
  intake: { whenIdle(maxWaitMs: number): Promise<void> } | undefined;
  /** The maintenance services' crontab and tasks, run on this runner. */
  maintenance: { crontab: string; taskList: TaskList };
}

export async function startFulfilmentRunner(runners: Runners, deps: FulfilmentRunnerDeps): Promise<{ fulfilment: FulfilmentBatcher; loop: JobLoopWatchdog }> {
  const { config, stripeCalls, db, handlers, logger, metrics, intake, maintenance } = deps;
  const { workerConcurrency: concurrency, maxAttempts, staleAfterMs } = config;
  const dispatch = createDispatch({ livemode: config.stripeLivemode, handlers });
  const fetchThin = thinFetcher(stripeCalls, new CallRate(config.stripeFetchesPerSecond), config.stripeLivemode, (type) => dispatch.handles(type));
  const fulfilment = new FulfilmentBatcher(db, {
    maxAttempts,
    dispatch,
    fetchThin,
    maxJobs: concurrency,
    ...(intake && { giveWay: () => intake.whenIdle(GIVE_WAY_MAX_WAIT_MS) }),
  });
  const loop = await runners.start('fulfilment', {
    concurrency,
    preset: {
      worker: {
        // Fetch jobs for all slots in one query (docs/speed.md). The trade-off on a kill: jobs held in the local queue stay locked; their events
        // are still 'processing' and the sweep reclaims them once the lock is older than
        // STALE_AFTER_SECONDS, so jobs must not sit in the local queue that long (ttl). Batched
        // completion is off: with it, a database that goes away while a batch of failures is
        // written ends graphile-worker's worker pool (test/database-outage.test.ts holds it).
        localQueue: { size: concurrency + 1, ttl: Math.min(60_000, staleAfterMs / 2) },
      },
    },
    crontab: maintenance.crontab,
    taskList: {
      [PROCESS_EVENT_TASK]: processStripeEventsTask({ fulfilment, logger: logger.child({ task: PROCESS_EVENT_TASK }), metrics }),
      ...maintenance.taskList,
    },
  });
  return { fulfilment, loop };
}
