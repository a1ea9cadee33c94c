import { Router } from 'express';
import { SERVICE_VERSION } from '../version.js';
import type { Readiness } from './readiness.js';

export function healthRoutes(readiness: Readiness): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    const live = readiness.live();
    res.status(live.ready ? 200 : 503).json(live.ready ? { ok: true, version: SERVICE_VERSION } : { ok: false, reason: live.reason, version: SERVICE_VERSION });
  });
  router.get('/readyz', async (_req, res) => {
    const result = await readiness.check();
    res.status(result.ready ? 200 : 503).json(result);
  });
  return router;
}
