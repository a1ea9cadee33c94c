// Starts what ROLE asks for on an open, migrated database: the HTTP app and/or the worker.
// main.ts and the tests share it, so tests run the same wiring as production.
import type { Server } from 'node:http';
import type { Runner } from 'graphile-worker';
import type Stripe from 'stripe';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { ClaimBatcher } from './events/claim-batcher.js';
import { buildApp, buildOpsApp } from './http/app.js';
import { Readiness } from './http/readiness.js';
import type { Logger } from './logger.js';
import { Metrics } from './metrics/metrics.js';
import { shutdown } from './shutdown.js';
import { startWorker } from './worker/run-worker.js';

export interface ServiceDeps {
  config: Config;
  database: Db;
  stripe: Stripe;
  logger: Logger;
}

export interface Service {
  readonly server: Server;
  readonly url: string;
  readonly worker: Runner | undefined;
  /** Settles when the worker stops, by a stop() or on its own; with the error, if it failed. */
  readonly workerStopped: Promise<unknown> | undefined;
  readonly readiness: Readiness;
  /** Graceful stop of HTTP and worker (not of the database, which the caller owns). */
  stop(): Promise<void>;
}

export const runsWeb = (config: Config) => config.role !== 'worker';
export const runsWorker = (config: Config) => config.role !== 'web';

export async function startService({ config, database, stripe, logger }: ServiceDeps): Promise<Service> {
  const readiness = new Readiness(database.pool);
  readiness.markMigrated();
  const claims = new ClaimBatcher(database.db, { maxAttempts: config.maxAttempts });
  const metrics = new Metrics(database.db);

  const worker = runsWorker(config)
    ? await startWorker({
        pool: database.pool,
        db: database.db,
        logger,
        concurrency: config.workerConcurrency,
        maxAttempts: config.maxAttempts,
        staleAfterMs: config.staleAfterMs,
        sweepCron: config.sweepCron,
        eventRetentionDays: config.eventRetentionDays,
        metrics,
        livemode: config.stripeLivemode,
        refundPolicy: config.refundPolicy,
      })
    : undefined;

  // The worker role still answers /healthz, /readyz and /metrics, nothing else.
  const app = runsWeb(config)
    ? buildApp({
        db: database.db,
        logger,
        readiness,
        webhookSecrets: config.webhookSecrets,
        claim: (event) => claims.claim(event),
        stripe,
        successUrl: config.checkoutSuccessUrl,
        cancelUrl: config.checkoutCancelUrl,
        apiToken: config.apiToken,
        adminToken: config.adminToken,
        maxAttempts: config.maxAttempts,
        staleAfterMs: config.staleAfterMs,
        trustProxyHops: config.trustProxyHops,
        rateLimitPerMinute: config.rateLimitPerMinute,
        metrics,
        metricsToken: config.metricsToken,
      })
    : buildOpsApp({ readiness, metrics, metricsToken: config.metricsToken, logger, trustProxyHops: config.trustProxyHops, rateLimitPerMinute: config.rateLimitPerMinute });

  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, (error?: Error) => (error ? reject(error) : resolve(s)));
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
