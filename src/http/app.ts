// Builds the Express app without listening, so tests and main.ts share one construction.
import express from 'express';
import type { Logger } from '../logger.js';
import { adminRoutes, type AdminDeps } from './admin-routes.js';
import { apiRoutes, type ApiDeps } from './api-routes.js';
import { errorHandler } from './error-handler.js';
import { healthRoutes } from './health-routes.js';
import type { Readiness } from './readiness.js';
import { webhookRoutes, type WebhookDeps } from './webhook-route.js';

export interface AppDeps extends WebhookDeps, ApiDeps, AdminDeps {
  readiness: Readiness;
  logger: Logger;
}

export function buildApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // Express 5 forwards rejected promises from async handlers to the error handler.
  app.use(healthRoutes(deps.readiness));
  app.use(webhookRoutes(deps));
  app.use(apiRoutes(deps));
  app.use(adminRoutes(deps));
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use(errorHandler(deps.logger));
  return app;
}
