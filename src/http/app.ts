// Builds the Express app without listening, so tests and main.ts share one construction.
import express from 'express';
import type { Logger } from '../logger.js';
import { adminRoutes, type AdminDeps } from './admin-routes.js';
import { apiRoutes, type ApiDeps } from './api-routes.js';
import { errorHandler } from './error-handler.js';
import { adminDashboard } from './admin-dashboard.js';
import { healthRoutes } from './health-routes.js';
import { metricsRoute } from './metrics-route.js';
import { rateLimits } from './rate-limits.js';
import { securityHeaders } from './security-headers.js';
import type { Readiness } from './readiness.js';
import { webhookHandler, type WebhookDeps } from './webhook-route.js';

export interface AppDeps extends WebhookDeps, ApiDeps, AdminDeps {
  readiness: Readiness;
  logger: Logger;
  /** Proxies in front (TRUST_PROXY): the client IP is read from X-Forwarded-For past that many. */
  trustProxyHops: number;
  /** RATE_LIMIT_PER_MINUTE; 0 turns rate limiting off (see rate-limits.ts). */
  rateLimitPerMinute: number;
  metricsToken: string;
}

export function buildApp(deps: AppDeps): express.Express {
  const app = newApp(deps.trustProxyHops);
  const limits = rateLimits(deps.rateLimitPerMinute, deps.logger);
  // Express 5 forwards rejected promises from async handlers to the error handler.
  // The webhook first (after the security headers), on the app itself: it is the route under load,
  // and every router before it (or around it) costs each request.
  app.post('/webhooks/stripe', webhookHandler(deps, limits.webhookRejections));
  app.use(healthRoutes(deps.readiness));
  app.use(metricsRoute(deps.metrics, deps.metricsToken, limits.metricsRejections));
  // Limits come before authentication, so guessing a token is limited too.
  app.use('/api', limits.api);
  app.use('/admin', limits.admin);
  app.use(apiRoutes(deps));
  app.use(adminDashboard(deps));
  app.use(adminRoutes(deps));
  return finish(app, deps.logger);
}

/** ROLE=worker: health checks and metrics, nothing else. */
export function buildOpsApp(deps: Pick<AppDeps, 'readiness' | 'metrics' | 'metricsToken' | 'logger' | 'trustProxyHops' | 'rateLimitPerMinute'>): express.Express {
  const app = newApp(deps.trustProxyHops);
  app.use(healthRoutes(deps.readiness));
  app.use(metricsRoute(deps.metrics, deps.metricsToken, rateLimits(deps.rateLimitPerMinute, deps.logger).metricsRejections));
  return finish(app, deps.logger);
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
