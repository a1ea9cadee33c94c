// graphile-worker task `process_stripe_event` (the name is stored in every queued job, so it stays):
// fulfils the events a job names. The job's payload is a batch of event ids, [{ eventId }, ...]
// (src/events/enqueue.ts); the rows hold the rest. The batch is fulfilled together, with the
// batches of the jobs running at once (src/fulfilment/fulfilment-batcher.ts), and each event
// reported on its own: graphile-worker retries, with its backoff, only the events whose entry in
// the returned list rejects.
//
// A job of a release before batch jobs (sql/0006) carries one { eventId } and the key
// `stripe_event:<id>`. That shape can go once no deployment can still hold such a job:
// `select count(*) from graphile_worker.jobs where key like 'stripe_event:%'` is 0 everywhere.
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import type { FulfilResult } from '../src/fulfilment/fulfil-event.js';
import { FulfilmentBatcher, type FulfilmentBatcherOptions } from '../src/fulfilment/fulfilment-batcher.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/metrics/metrics.js';

const eventRef = z.object({ eventId: z.string().min(1) });
// The job's payload: which events to fulfil (the events' own payloads are in their rows).
const eventRefs = z.union([z.array(eventRef).min(1), eventRef]);

export interface ProcessStripeEventDeps extends FulfilmentBatcherOptions {
  /** The worker pool. */
  db: Kysely<Database>;
  logger: Logger;
  metrics: Metrics;
}

export function processStripeEventsTask({ db, logger, metrics, ...fulfilOptions }: ProcessStripeEventDeps): Task {
  const fulfilment = new FulfilmentBatcher(db, fulfilOptions);
  /** Logs and counts one event's result; returns the error that should make it retry. */
  const report = (eventId: string, jobId: string, result: FulfilResult): Error | undefined => {
    const fields = { eventId, jobId, ...('type' in result ? { type: result.type, attempt: result.attempt } : {}), status: result.status };
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
        return undefined;
      }
      // A wait that ran out of attempts (RetryLaterError): ended, with the reason on the row.
      if (result.status !== 'processing') {
        logger.warn({ ...fields, err: result.error }, 'event ignored: what it waited for never came');
        return undefined;
      }
      logger.warn({ ...fields, err: result.error }, 'event handler failed, will retry');
      return result.error;
    }
    // 'missing' and 'already_finished' are a second job for the same event (a replay or a
    // reclaim racing a late commit): nothing was done, which is the point.
    logger.info(fields, 'type' in result ? 'event fulfilled' : 'nothing to do for this event');
    return undefined;
  };

  return async (jobPayload, helpers) => {
    const parsed = eventRefs.safeParse(jobPayload);
    if (!parsed.success) {
      // Retrying cannot fix a malformed payload; log it and let the job complete.
      logger.error({ jobId: helpers.job.id }, 'process_stripe_event job without valid event ids');
      return;
    }
    const refs = Array.isArray(parsed.data) ? parsed.data : [parsed.data];
    const results = await fulfilment.fulfil(refs.map((ref) => ref.eventId), { retry: helpers.job.attempts > 1 });
    const retries = refs.map((ref, i) => report(ref.eventId, helpers.job.id, results[i]!));
    if (!Array.isArray(parsed.data)) {
      // Rethrown so graphile-worker schedules the retry with its exponential backoff.
      if (retries[0]) throw retries[0];
      return;
    }
    // A batch job: one entry per event, in payload order; graphile-worker keeps the rejected ones
    // in the job for its retry and drops the rest. Marked handled here so that Node never reports
    // them as unhandled before graphile-worker settles the list.
    return retries.map((error) => {
      if (!error) return undefined;
      const retry = Promise.reject(error);
      retry.catch(() => {});
      return retry;
    });
  };
}
