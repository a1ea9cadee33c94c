// GET /metrics in Prometheus text format, on every role (a worker-only container serves it
// beside its health checks). It tells business volume, so it takes a bearer token:
// METRICS_TOKEN, or ADMIN_TOKEN when that is unset (Prometheus: `authorization: credentials`).
// Refused requests are rate limited (rate-limits.ts), so guessing is no cheaper here than on /admin.
import { Router, type RequestHandler } from 'express';
import type { Metrics } from '../metrics/metrics.js';
import { requireBearer } from './auth.js';

export function metricsRoute(metrics: Metrics, token: string, limitRejections: RequestHandler): Router {
  const router = Router();
  router.get('/metrics', requireBearer(token, 'metrics', limitRejections), async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return router;
}
