// /admin/api/*: the operator's JSON API. ADMIN_TOKEN on every route, no exceptions: as a bearer
// token, or the dashboard's session cookie that signing in with it sets.
import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { accountView } from '../accounts/account-view.js';
import type { BusinessModule, RouteContext } from '../module-contract.js';
import { DELIVERY_STATUSES } from '../db/schema.js';
import { findEvent, replayEvents } from '../events/event-store.js';
import { listFailedEvents, listStuckEvents, listWaitingEvents } from '../events/event-lists.js';
import { eventDetail, eventTimeline, findPayloadText, searchEvents } from '../events/read-model.js';
import type { Metrics } from '../metrics/metrics.js';
import { listNotifications, notificationSummary, replayNotifications } from '../notifications/notification-store.js';
import { NOTIFICATION_ID } from '../notifications/outbox.js';
import { sweepStaleEvents } from '../maintenance/sweep.js';
import { adminGuard } from './admin-dashboard.js';
import { proveConnection } from './connection-keep-alive.js';
import { badRequest, checkIdParam, lookupId } from './validation.js';

const eventList = z.strictObject({ status: z.enum(['failed', 'stuck', 'waiting']), limit: z.coerce.number().int().min(1).max(500).default(50) });
const timelineQuery = z.strictObject({ hours: z.coerce.number().int().min(1).max(48).default(3) });
const searchQuery = z.strictObject({ q: z.string().trim().pipe(lookupId) });
const accountParam = z.object({ account_id: lookupId });
const notificationList = z.strictObject({
  status: z.enum(DELIVERY_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});
const notificationId = z.string().regex(NOTIFICATION_ID, 'must be a notification id (msg_…), as webhook-id carries it');
const notificationReplay = z.union([z.strictObject({ ids: z.array(notificationId).min(1).max(500) }), z.strictObject({ failed: z.literal(true) })], {
  error: 'send {"ids": ["msg_…", …]} or {"failed": true}',
});

/**
 * `members` as a JSON object with one more member, `name`, whose value is `json`, JSON text put in
 * as it is: a stored payload (read-model.ts's findPayloadText says why it is not parsed). Postgres
 * checked that it is JSON when it was stored.
 */
function withJsonMember(members: Record<string, unknown>, name: string, json: string): string {
  const head = JSON.stringify(members).slice(0, -1);
  return `${head}${head === '{' ? '' : ','}${JSON.stringify(name)}:${json}}`;
}

/** Past the guard: an operator's (or the dashboard's) connection keeps its keep-alive. */
const proveConnectionOf: RequestHandler = (req, _res, next) => {
  proveConnection(req);
  next();
};

/** The inbox's own operations, then each module's under /admin/api. */
export function adminRoutes(modules: readonly BusinessModule[], context: RouteContext, metrics: Metrics): Router {
  const { db, logger } = context;
  const { adminToken, maxAttempts, staleAfterMs } = context.config;
  const router = Router();
  router.use('/admin', adminGuard({ db, adminToken }), proveConnectionOf, express.json({ limit: '16kb' }));
  router.param('id', checkIdParam);

  router.get('/admin/api/status', async (_req, res) => {
    const [inbox, endpoints] = await Promise.all([metrics.inboxStatus(), notificationSummary(db)]);
    res.json({ ...inbox, notifications: { enabled: context.notifications.enabled, endpoints } });
  });

  router.get('/admin/api/events/:id', async (req, res) => {
    const event = await findEvent(db, req.params.id);
    if (!event) return void res.status(404).json({ error: 'event not found' });
    const [{ payloadText, ...detail }, notifications] = await Promise.all([
      eventDetail(db, event, modules),
      listNotifications(db, { eventId: event.event_id }),
    ]);
    const members = {
      event_id: event.event_id,
      type: event.type,
      object_id: event.object_id,
      status: event.status,
      attempts: event.attempts,
      last_error: event.last_error,
      duplicate_of: event.duplicate_of,
      livemode: event.livemode,
      received_at: event.received_at,
      finished_at: event.finished_at,
      ...detail,
      notifications,
    };
    res.type('json').send(withJsonMember(members, 'payload', payloadText));
  });

  // The payload alone, as its own JSON document: what the dashboard shows, and what `curl` saves.
  router.get('/admin/api/events/:id/payload', async (req, res) => {
    const text = await findPayloadText(db, req.params.id);
    if (text === undefined) return void res.status(404).json({ error: 'event not found' });
    res.type('json').send(text);
  });

  router.post('/admin/api/events/:id/replay', async (req, res) => {
    const [replayed] = await replayEvents(db, [req.params.id], { maxAttempts });
    if (!replayed) return void res.status(404).json({ error: 'event not found' });
    res.status(202).json({ event_id: replayed, status: 'processing' });
  });

  // The dashboard's lists: dead letters, and 'processing' events older than the stale threshold.
  router.get('/admin/api/events', async (req, res) => {
    const query = eventList.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    const { status, limit } = query.data;
    const lists = {
      failed: () => listFailedEvents(db, limit),
      stuck: () => listStuckEvents(db, staleAfterMs, limit),
      waiting: () => listWaitingEvents(db, limit),
    };
    res.json(await lists[status]());
  });

  router.get('/admin/api/timeline', async (req, res) => {
    const query = timelineQuery.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    res.json(await eventTimeline(db, query.data.hours));
  });

  router.get('/admin/api/search', async (req, res) => {
    const query = searchQuery.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    res.json(await searchEvents(db, query.data.q, modules));
  });

  // Everything the service holds under one of the app's accounts (src/accounts/account-view.ts).
  router.get('/admin/api/accounts/:account_id', async (req, res) => {
    const params = accountParam.safeParse(req.params);
    if (!params.success) return badRequest(res, params.error);
    res.json(await accountView(db, params.data.account_id, modules));
  });

  // Outcome notifications to the app (docs/notifications.md): newest first, each delivery with its last attempts.
  router.get('/admin/api/notifications', async (req, res) => {
    const query = notificationList.safeParse(req.query);
    if (!query.success) return badRequest(res, query.error);
    res.json(await listNotifications(db, query.data));
  });

  // Same webhook-id, same body, a fresh count of attempts.
  router.post('/admin/api/notifications/replay', async (req, res) => {
    const body = notificationReplay.safeParse(req.body);
    if (!body.success) return badRequest(res, body.error);
    res.status(202).json(await replayNotifications(db, body.data));
  });

  router.post('/admin/api/sweep', async (_req, res) => {
    const result = await sweepStaleEvents(db, { staleAfterMs, maxAttempts, logger, metrics });
    res.json(result);
  });

  for (const module of modules) if (module.adminRoutes) router.use('/admin/api', module.adminRoutes(context));
  return router;
}
