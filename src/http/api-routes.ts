// /api/*: what the selling application calls. Every route under it is a business module's
// (src/business-module.ts); this router gives them all the same door: bearer API_TOKEN, JSON
// bodies of at most 16 KB.
import express, { Router } from 'express';
import type { BusinessModule, RouteContext } from '../module-contract.js';
import { requireBearer } from './auth.js';

export function apiRoutes(modules: readonly BusinessModule[], context: RouteContext): Router {
  const router = Router();
  router.use('/api', requireBearer(context.config.apiToken, 'api'), express.json({ limit: '16kb' }));
  for (const module of modules) if (module.apiRoutes) router.use('/api', module.apiRoutes(context));
  return router;
}
