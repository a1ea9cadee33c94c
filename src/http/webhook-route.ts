// POST /webhooks/stripe. Verify, claim, answer. Nothing slow happens here: the 2xx goes out as
// soon as the event row and its job are committed (DESIGN invariant 1), and the worker does the
// rest. Every answer is one of a fixed set; Stripe retries anything that is not 2xx.
import express, { Router } from 'express';
import type { ClaimOutcome, IncomingEvent } from '../events/event-store.js';
import { isDatabaseUnavailable } from '../db/pg-errors.js';
import type { Logger } from '../logger.js';
import { parseWebhook, WebhookRejection } from '../stripe/webhook-event.js';
import { DATABASE_UNAVAILABLE } from './error-handler.js';

export const WEBHOOK_BODY_LIMIT = '1mb';

export interface WebhookDeps {
  webhookSecrets: readonly string[];
  /** Durably claims the event and enqueues its job; resolves only after commit. */
  claim: (event: IncomingEvent) => Promise<ClaimOutcome>;
  logger: Logger;
}

export function webhookRoutes({ webhookSecrets, claim, logger }: WebhookDeps): Router {
  const router = Router();
  router.post(
    '/webhooks/stripe',
    // Raw body on this route only: the signature covers the exact bytes. The limit is enforced
    // from Content-Length before reading, and while streaming for chunked bodies. No inflate:
    // Stripe does not compress, and a compressed body would dodge the limit until inflated.
    express.raw({ type: () => true, limit: WEBHOOK_BODY_LIMIT, inflate: false }),
    async (req, res) => {
      const started = performance.now();
      const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      let event: IncomingEvent;
      try {
        event = parseWebhook(rawBody, req.headers['stripe-signature'], webhookSecrets);
      } catch (error) {
        if (!(error instanceof WebhookRejection)) throw error;
        logger.warn({ outcome: 'rejected', reason: error.message }, 'webhook rejected');
        return void res.status(400).json({ error: error.message });
      }
      const log = { eventId: event.eventId, type: event.type };
      let outcome: ClaimOutcome;
      try {
        outcome = await claim(event);
      } catch (error) {
        if (!isDatabaseUnavailable(error)) logger.error({ ...log, err: error }, 'claiming webhook event failed');
        else logger.warn({ ...log, outcome: 'unavailable' }, 'database unavailable, Stripe will retry');
        // Whatever went wrong, nothing was committed: 503 makes Stripe deliver again.
        return void res.status(503).json(DATABASE_UNAVAILABLE);
      }
      logger.info({ ...log, outcome, durationMs: Math.round(performance.now() - started) }, 'webhook');
      res.status(200).json(outcome === 'duplicate' ? { received: true, duplicate: true } : { received: true });
    },
  );
  return router;
}
