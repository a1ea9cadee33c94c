// Starts what ROLE asks for on an open, migrated database: the HTTP app and/or the worker.
// main.ts and the tests share it, so tests run the same wiring as production.
import type { Server } from 'node:http';
import type Stripe from 'stripe';
import type { BusinessModule } from './module-contract.js';
import type { Config } from './config.js';
import type { ServicePools } from './db/pools.js';
import { ClaimBatcher } from './events/claim-batcher.js';
import { intakeRule, registerActedOnTypes } from './fulfilment/finish-at-intake.js';
import { createOutbox } from './notifications/outbox.js';
import { buildApp, buildOpsApp } from './http/app.js';
import { createServer } from './http/server.js';
import { Readiness } from './http/readiness.js';
import type { Logger } from './logger.js';
import { Metrics } from './metrics/metrics.js';
import { shutdown } from './shutdown.js';
import { StripeCalls } from './stripe/stripe-calls.js';
import { startWorker, type Worker, type WorkerOptions } from './worker/start-worker.js';

export interface ServiceDeps {
  config: Config;
  /** Open and migrated; the caller owns them and closes them after stop(). */
  pools: ServicePools;
  stripe: Stripe;
  /** The businesses to run (src/modules/index.ts); the service itself knows none. */
  modules: readonly BusinessModule[];
  logger: Logger;
  /** Tests only: tighter thresholds for the worker (src/worker/start-worker.ts). */
  workerOptions?: WorkerOptions;
}

export interface Service {
  readonly server: Server;
  readonly url: string;
  readonly worker: Worker | undefined;
  /** Settles when the worker stops, by a stop() or on its own; with the error, if it failed. */
  readonly workerStopped: Promise<unknown> | undefined;
  readonly readiness: Readiness;
  /** Graceful stop of HTTP and worker (not of the database, which the caller owns). */
  stop(): Promise<void>;
}

const runsWeb = (config: Config) => config.role !== 'worker';
const runsWorker = (config: Config) => config.role !== 'web';

export async function startService({ config, pools, stripe, modules, logger, workerOptions }: ServiceDeps): Promise<Service> {
  const readiness = new Readiness(pools.intake.pool);
  readiness.markMigrated();
  const metrics = new Metrics(pools.api.db, modules);
  pools.instrument(metrics.poolObserver);
  const handlers = modules.map((module) => module.handlers(config, createOutbox(config)));
  const intake = intakeRule(handlers, config.stripeLivemode);
  // Before the first claim, this release's or the other's during a deploy (finish-at-intake.ts).
  await registerActedOnTypes(pools.intake.db, intake);
  const claims = new ClaimBatcher(pools.intake.db, { maxAttempts: config.maxAttempts, finishAtIntake: (event) => intake.finish(event) });
  const stripeCalls = new StripeCalls(stripe, { maxConcurrent: config.stripeMaxConcurrentCalls, timeoutMs: config.stripeTimeoutMs, metrics, logger });

  const worker = runsWorker(config)
    ? await startWorker(
        {
          config,
          stripeCalls,
          pool: pools.worker.pool,
          db: pools.worker.db,
          notificationDb: pools.notifications.db,
          modules,
          handlers,
          logger,
          metrics,
          ...(runsWeb(config) && { intake: claims }),
        },
        workerOptions,
      )
    : undefined;
  if (worker) {
    readiness.watchJobLoop(() => Object.values(worker.status()).find((runner) => runner.stalled)?.stalled, { gatesReadiness: !runsWeb(config) });
    metrics.watchJobLoops(() => worker.status());
  }

  // The worker role still answers /healthz, /readyz and /metrics, nothing else.
  const app = runsWeb(config)
    ? buildApp({
        config,
        db: pools.api.db,
        claim: (event) => claims.claim(event),
        stripeCalls,
        modules,
        readiness,
        logger,
        metrics,
      })
    : buildOpsApp({ config, readiness, metrics, logger });

  const server = createServer(app, { requestTimeoutMs: config.httpRequestTimeoutMs });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;

  return {
    server,
    url: `http://127.0.0.1:${port}`,
    worker,
    // Settled, never rejected: a failing worker must not be an unhandled rejection.
    workerStopped: worker?.promise.then(
      () => undefined,
      (error: unknown) => error ?? new Error('the worker failed'),
    ),
    readiness,
    stop: () => shutdown({ server, worker, readiness, closers: [], logger, timeoutMs: config.shutdownTimeoutMs }),
  };
}
