// The usage module's HTTP. Under /api: an account's usage records (GET /accounts/:id/usage).
// Under /admin/api, for the dashboard: the reports' counts and a list by status
// (GET /usage-reports), and the replay of failed reports (POST /usage-reports/replay), the same
// reads and replay as npm run usage (report-store.ts says when a replay is right).
import { Router } from 'express';
import { z } from 'zod';
import { badRequest, checkIdParam, type ModuleRouteContext } from '../../business-module.js';
import { accountId, pageQuery } from '../ledger/index.js';
import { listUsage } from './account-usage.js';
import { listUsageReports, replayUsageReports, USAGE_ID, usageSummary } from './report-store.js';

const MAX_LIMIT = 500;
const limitRule = `must be a whole number from 1 to ${MAX_LIMIT}`;
const listQuery = z.strictObject({
  status: z.enum(['pending', 'sent', 'failed'], { error: 'must be one of pending, sent, failed' }).default('failed'),
  limit: z.coerce.number({ error: limitRule }).int(limitRule).min(1, limitRule).max(MAX_LIMIT, limitRule).default(50),
});
const usageId = z.string().regex(USAGE_ID, 'must be usage ids (usage_ and 32 hex digits)');
const replayBody = z.union([z.strictObject({ ids: z.array(usageId).min(1).max(MAX_LIMIT) }), z.strictObject({ failed: z.literal(true) })], {
  error: 'give {ids: [usage_id…]} or {failed: true}',
});

const usagePage = pageQuery(usageId);

export function usageApiRoutes({ db }: ModuleRouteContext<unknown>): Router {
  const router = Router();
  router.param('id', checkIdParam);

  router.get('/accounts/:id/usage', async (req, res) => {
    const id = accountId.safeParse(req.params.id);
    if (!id.success) return badRequest(res, id.error);
    const query = usagePage.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    const page = await listUsage(db, id.data, { limit: query.data.limit, after: query.data.cursor });
    if (!page) return void res.status(400).json({ error: 'cursor: names no usage of this account; pass the next_cursor of the previous page' });
    res.json({ account_id: id.data, usage: page.usage, next_cursor: page.nextCursor });
  });

  return router;
}

export function usageAdminRoutes({ db }: ModuleRouteContext<unknown>): Router {
  const router = Router();

  router.get('/usage-reports', async (req, res) => {
    const query = listQuery.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    const [summary, reports] = await Promise.all([usageSummary(db), listUsageReports(db, query.data)]);
    res.json({ summary, reports });
  });

  router.post('/usage-reports/replay', async (req, res) => {
    const body = replayBody.safeParse(req.body ?? {});
    if (!body.success) return badRequest(res, body.error);
    const ids = 'ids' in body.data ? [...new Set(body.data.ids)] : undefined;
    const replayed = await replayUsageReports(db, ids ? { ids } : { failed: true });
    // Named, and not failed (or unknown): left as they are.
    const skipped = (ids ?? []).filter((id) => !replayed.includes(id));
    res.json({ replayed, skipped });
  });

  return router;
}
