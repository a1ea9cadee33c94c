// graphile-worker task `process_stripe_event`: payload { eventId }; the row holds the rest.
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import type { FulfilResult } from '../src/fulfilment/fulfil-event.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/metrics/metrics.js';

const payloadSchema = z.object({ eventId: z.string().min(1) });

export interface ProcessStripeEventDeps {
  /** fulfilEvent, through the worker's group commit (src/worker/run-worker.ts). */
  fulfil: (eventId: string) => Promise<FulfilResult>;
  logger: Logger;
  metrics: Metrics;
}

export function processStripeEvent({ fulfil, logger, metrics }: ProcessStripeEventDeps): Task {
  return async (payload, helpers) => {
    const parsed = payloadSchema.safeParse(payload);
    if (!parsed.success) {
      // Retrying cannot fix a malformed payload; log it and let the job complete.
      logger.error({ jobId: helpers.job.id }, 'process_stripe_event job without a valid eventId');
      return;
    }
    const { eventId } = parsed.data;
    const result = await fulfil(eventId);
    const fields = { eventId, jobId: helpers.job.id, ...('type' in result ? { type: result.type, attempt: result.attempt } : {}), status: result.status };
    if ('type' in result) {
      if (result.error) metrics.handlerFailures.inc({ type: result.type, retry: result.status === 'processing' ? 'yes' : 'no' });
      if (result.status !== 'processing') {
        metrics.eventsFinished.inc({ type: result.type, status: result.status });
        metrics.receivedToFinished.observe({ type: result.type }, (Date.now() - result.receivedAt.getTime()) / 1000);
      }
    }
    if ('error' in result && result.error !== undefined) {
      if (result.status === 'failed') {
        logger.error({ ...fields, err: result.error }, 'event failed: dead letter, replay after fixing the cause');
        return;
      }
      logger.warn({ ...fields, err: result.error }, 'event handler failed, will retry');
      // Rethrown so graphile-worker schedules the retry with its exponential backoff.
      throw result.error;
    }
    // 'missing' and 'already_finished' are a second job for the same event (a replay or a
    // reclaim racing a late commit): nothing was done, which is the point.
    logger.info(fields, 'type' in result ? 'event fulfilled' : 'nothing to do for this event');
  };
}
