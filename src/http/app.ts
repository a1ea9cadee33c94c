// Builds the Express app without listening, so tests and main.ts share one construction.
import express from 'express';
import type { Kysely } from 'kysely';
import type { BusinessModule } from '../module-contract.js';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import type { ClaimOutcome, IncomingEvent } from '../events/event-store.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { longestCallMs } from '../stripe/client.js';
import type { StripeCalls } from '../stripe/stripe-calls.js';
import { adminDashboard } from './admin-dashboard.js';
import { adminRoutes } from './admin-routes.js';
import { apiRoutes } from './api-routes.js';
import { hasBearer } from './auth.js';
import { proveConnection } from './connection-keep-alive.js';
import { errorHandler } from './error-handler.js';
import { healthRoutes } from './health-routes.js';
import { metricsRoute } from './metrics-route.js';
import { openApiRoute } from './openapi-route.js';
import { rateLimits } from './rate-limits.js';
import type { Readiness } from './readiness.js';
import { securityHeaders } from './security-headers.js';
import { webhookHandler } from './webhook-route.js';
import { devCheckoutReturnPages } from '../dev/checkout-return-pages.js';
import { devNotificationReceiver } from '../dev/notification-receiver.js';
import { createOutbox } from '../notifications/outbox.js';

export interface AppDeps {
  config: Config;
  /** The API pool: everything but the webhook's claim. */
  db: Kysely<Database>;
  /** Durably claims the event and enqueues its job; resolves only after commit. */
  claim: (event: IncomingEvent) => Promise<ClaimOutcome>;
  stripeCalls: StripeCalls;
  modules: readonly BusinessModule[];
  readiness: Readiness;
  logger: Logger;
  metrics: Metrics;
}

export function buildApp({ config, db, claim, stripeCalls, modules, readiness, logger, metrics }: AppDeps): express.Express {
  const app = newApp(config.trustProxyHops);
  const limits = rateLimits(config.rateLimitPerMinute, logger);
  // Express 5 forwards rejected promises from async handlers to the error handler.
  // The webhook first (after the security headers), on the app itself: it is the route under load,
  // and every router before it (or around it) costs each request.
  const webhook = { webhookSecrets: config.webhookSecrets, webhookBodyBudgetBytes: config.webhookBodyBudgetBytes, claim, logger, metrics };
  app.post('/webhooks/stripe', webhookHandler(webhook, limits.webhookRejections));
  app.use(healthRoutes(readiness));
  app.use(metricsRoute(metrics, config.metricsToken, limits.metricsRejections));
  app.use(openApiRoute());
  // Limits come before authentication, so guessing a token is limited too.
  app.use('/api', limits.api, provesWithBearer(config.apiToken));
  app.use('/admin', limits.admin);
  const context = {
    config,
    db,
    stripeCalls,
    logger,
    idempotencyLeaseMs: longestCallMs({ timeoutMs: config.stripeTimeoutMs }),
    notifications: createOutbox(config),
  };
  app.use(apiRoutes(modules, context));
  app.use(adminDashboard({ db, adminToken: config.adminToken }));
  app.use(adminRoutes(modules, context, metrics));
  if (config.nodeEnv === 'development') {
    app.use(devNotificationReceiver({ secrets: config.appWebhookSecrets, logger }));
    app.use(devCheckoutReturnPages());
  }
  return finish(app, logger);
}

/** ROLE=worker: health checks and metrics, nothing else. */
export function buildOpsApp({ config, readiness, metrics, logger }: Pick<AppDeps, 'config' | 'readiness' | 'metrics' | 'logger'>): express.Express {
  const app = newApp(config.trustProxyHops);
  app.use(healthRoutes(readiness));
  app.use(metricsRoute(metrics, config.metricsToken, rateLimits(config.rateLimitPerMinute, logger).metricsRejections));
  return finish(app, logger);
}

/**
 * A request with the right token proves its connection (connection-keep-alive.ts). The routes'
 * own guard still decides whether it is let in; this only reads the same header first.
 */
function provesWithBearer(token: string): express.RequestHandler {
  return (req, _res, next) => {
    if (hasBearer(req, token)) proveConnection(req);
    next();
  };
}

function newApp(trustProxyHops: number): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // A hop count, never `true`: trusting every X-Forwarded-For entry lets any client pick its IP.
  // `false` rather than 0 lets the rate limiter warn once when X-Forwarded-For arrives anyway.
  app.set('trust proxy', trustProxyHops > 0 ? trustProxyHops : false);
  app.use(securityHeaders);
  return app;
}

function finish(app: express.Express, logger: Logger): express.Express {
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use(errorHandler(logger));
  return app;
}
