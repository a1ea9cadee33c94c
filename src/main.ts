// The one long-running entry: config → database → migrate → HTTP and/or worker by ROLE →
// graceful shutdown on SIGTERM/SIGINT.
import { ConfigError, type Config } from './config.js';
import { openServicePools } from './db/pools.js';
import { PoolerModeError, resolveDatabaseUrls } from './db/connection-pooler.js';
import { databaseUrlOrEmbedded } from './db/embedded-postgres.js';
import { migrate } from './db/migrate.js';
import { runWorkerMigrations } from './queue/worker-migrations.js';
import { developmentHelp } from './dev/development-help.js';
import { describeError } from './outcomes.js';
import { createLogger, logUnhandledRejections, type Logger } from './logger.js';
import { startService } from './service.js';
import { installShutdown } from './shutdown.js';
import { startHeapTrimming } from './trim-heap.js';
import { startTracing } from './tracing/start-tracing.js';
import { traceIdsOfActiveSpan } from './tracing/trace-context.js';
import { createStripeClient } from './stripe/client.js';
import { businessModules, emptyCatalogWarning, loadServiceConfig, serviceMigrations } from './modules/index.js';
import { SERVICE_VERSION } from './version.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadServiceConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`stripe-inbox: ${error.message}\n`);
    process.exit(1);
  }
  // Before anything that makes spans; undefined, with no SDK loaded, unless OTEL_* turns it on.
  const tracing = await startTracing(config);
  // JSON everywhere but a development terminal, where a person reads it.
  const logger = createLogger(config.logLevel, {
    sync: false,
    pretty: config.nodeEnv === 'development' && process.stdout.isTTY,
    ...(tracing && { mixin: traceIdsOfActiveSpan }),
  });
  logUnhandledRejections(logger);
  for (const warning of config.warnings) logger.warn(warning);
  // Closed in this order at shutdown: database pool first, then the development stand-ins, then tracing.
  const closers: Array<() => Promise<void>> = [];
  // Last: the spans of the shutdown itself are exported too.
  if (tracing) closers.push(() => tracing.shutdown());

  const database = await databaseUrlOrEmbedded(config.databaseUrl, logger);
  closers.unshift(database.stop);

  let stripeKey = config.stripeSecretKey;
  let stripeApiBase = config.stripeApiBase;
  if (stripeKey === undefined) {
    // config.ts refuses production without a key, so this is development only (and loaded only here).
    const { startOfflineStripe, OFFLINE_STRIPE_PORT } = await import('./dev/offline-stripe/index.js');
    // A known port, so that `npm run send-event -- --thin` finds it; any other when it is taken.
    const offline = await startOfflineStripe({ port: OFFLINE_STRIPE_PORT }).catch(() => startOfflineStripe());
    closers.unshift(() => offline.close());
    stripeKey = 'sk_test_offline';
    stripeApiBase = offline.url;
    logger.warn({ url: offline.url }, 'STRIPE_SECRET_KEY is unset: using the offline Stripe stand-in (development only)');
  }

  const urls = await resolveDatabaseUrls(database.url, config.databaseDirectUrl);
  if (urls.transactionPooled) logger.info('DATABASE_URL goes through a pooler in transaction mode: the worker and migrations use DATABASE_DIRECT_URL');
  const pools = openServicePools(urls, config);
  closers.unshift(() => pools.close());

  await migrate(pools.worker.pool, logger, await serviceMigrations(), { runWorkerMigrations });
  // Development keeps the seeded package and plan; production may have archived them all.
  const catalogWarning = config.nodeEnv === 'production' ? await emptyCatalogWarning(pools.api.db) : undefined;
  if (catalogWarning) logger.warn(catalogWarning);
  const stripe = createStripeClient(stripeKey, stripeApiBase, { timeoutMs: config.stripeTimeoutMs });
  const service = await startService({ config, pools, stripe, modules: businessModules, logger });
  // Before the start line: a supervisor may signal as soon as it sees the process up.
  installShutdown({ ...service, closers, logger, timeoutMs: config.shutdownTimeoutMs });
  const heapTrimming = startHeapTrimming();
  logger.info({ url: service.url, version: SERVICE_VERSION, role: config.role, pid: process.pid, node: process.version, heapTrimming }, 'stripe-inbox started');
  if (config.devSecretsFile) {
    logger.info(`development secrets are in ${config.devSecretsFile}`);
    process.stdout.write(developmentHelp(config));
  }

  // A worker that stops on its own would leave a process that accepts events and never fulfils
  // them while still looking healthy: exit instead, and let the container restart.
  void service.workerStopped?.then((error) => service.readiness.shuttingDown || exitOnWorkerLoss(logger, error));
}

function exitOnWorkerLoss(logger: Logger, error: unknown): void {
  logger.fatal({ err: error }, 'the worker stopped unexpectedly: exiting so the container restarts');
  process.exit(1);
}

main().catch((error: unknown) => {
  // The causes first: "applying migration …" alone does not say what to fix.
  // A refusal that names its own fix (PoolerModeError) goes without a stack.
  const stack = error instanceof Error && !(error instanceof PoolerModeError) ? (error.stack ?? '') : '';
  process.stderr.write(`stripe-inbox failed to start: ${describeError(error)}\n${stack}\n`);
  process.exit(1);
});
