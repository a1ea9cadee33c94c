// /admin/api/*: the operator's JSON API. Bearer ADMIN_TOKEN on every route, no exceptions.
import { Router } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { findEvent, replayEvents } from '../events/event-store.js';
import { getInboxStatus } from '../events/event-status.js';
import { sweepStaleEvents } from '../sweep/sweep-stale-events.js';
import type { Logger } from '../logger.js';
import { requireBearer } from './auth.js';

export interface AdminDeps {
  db: Kysely<Database>;
  adminToken: string;
  maxAttempts: number;
  staleAfterMs: number;
  logger: Logger;
}

export function adminRoutes({ db, adminToken, maxAttempts, staleAfterMs, logger }: AdminDeps): Router {
  const router = Router();
  router.use('/admin', requireBearer(adminToken, 'admin'));

  router.get('/admin/api/status', async (_req, res) => {
    res.json(await getInboxStatus(db));
  });

  router.get('/admin/api/events/:id', async (req, res) => {
    const event = await findEvent(db, req.params.id);
    if (!event) return void res.status(404).json({ error: 'event not found' });
    res.json({
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
    });
  });

  router.post('/admin/api/events/:id/replay', async (req, res) => {
    const [replayed] = await replayEvents(db, [req.params.id], { maxAttempts });
    if (!replayed) return void res.status(404).json({ error: 'event not found' });
    res.status(202).json({ event_id: replayed, status: 'processing' });
  });

  router.post('/admin/api/sweep', async (_req, res) => {
    const result = await sweepStaleEvents(db, { staleAfterMs, maxAttempts, logger });
    res.json(result);
  });

  return router;
}
