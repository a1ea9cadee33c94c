// Last stop for errors: a fixed message per kind, never an internal error text and never the
// request echoed back. Body-parser errors are the client's (4xx), as is anything Express or its
// router marks 4xx (e.g. a path parameter that is not valid percent-encoding); an unreachable
// database is a 503 so Stripe and clients retry.
import type { ErrorRequestHandler } from 'express';
import { isDatabaseUnavailable, isPoolBusy } from '../db/pg-errors.js';
import type { Logger } from '../logger.js';

export const DATABASE_UNAVAILABLE = { error: 'database unavailable, retry later' } as const;
export const POOL_BUSY = { error: 'too busy right now, retry shortly' } as const;
/** Seconds a client should wait before retrying a 503 that load caused. */
export const BUSY_RETRY_AFTER_SECONDS = 1;
/**
 * Seconds to wait before retrying while the database is away: a restart takes a few seconds, a
 * failover (Patroni) about ten. Stripe keeps its own schedule; an API client learns when to retry.
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const { type, limit, status } = typeof error === 'object' && error !== null ? (error as { type?: unknown; limit?: unknown; status?: unknown }) : {};
    if (type === 'entity.too.large') {
      const bound = typeof limit === 'number' ? `: the limit is ${limit} bytes` : '';
      return void res.status(413).json({ error: `request body too large${bound}` });
    }
    if (type === 'encoding.unsupported') return void res.status(415).json({ error: 'compressed request bodies are not accepted' });
    if (type === 'entity.parse.failed') return void res.status(400).json({ error: 'request body is not valid JSON' });
    if (typeof type === 'string') return void res.status(400).json({ error: 'request body could not be read' });
    if (typeof status === 'number' && status >= 400 && status < 500) {
      logger.info({ status, path: req.path }, 'malformed request');
      return void res.status(status).json({ error: 'malformed request' });
    }
    if (isPoolBusy(error)) {
      logger.warn({ err: error, path: req.path }, 'no free database connection in time: the pool is busy, not the database down');
      return void res.status(503).set('Retry-After', String(BUSY_RETRY_AFTER_SECONDS)).json(POOL_BUSY);
    }
    if (isDatabaseUnavailable(error)) {
      logger.warn({ err: error, path: req.path }, 'database unavailable');
      return void res.status(503).set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS)).json(DATABASE_UNAVAILABLE);
    }
    logger.error({ err: error, path: req.path }, 'request failed');
    res.status(500).json({ error: 'internal error' });
  };
}
