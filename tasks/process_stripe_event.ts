// graphile-worker task `process_stripe_event` (the name is stored in every queued job, so it stays):
// fulfils the events a job names. The job's payload is a batch of event ids, [{ eventId }, ...]
// (src/queue/job-queue.ts); the rows hold the rest. The batch is fulfilled together, with the
// batches of the jobs running at once (src/fulfilment/fulfilment-batcher.ts), and each event
// reported on its own (src/fulfilment/report-result.ts): graphile-worker retries, with its
// backoff, only the events whose entry in the returned list rejects.
//
// A job of a release before batch jobs (sql/0006) carries one { eventId } and the key
// `stripe_event:<id>`; that shape goes when no deployment holds such a job (docs/migrations.md,
// compatibility C1).
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import type { FulfilmentBatcher } from '../src/fulfilment/fulfilment-batcher.js';
import { resultReporter } from '../src/fulfilment/report-result.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/metrics/metrics.js';

const eventRef = z.object({ eventId: z.string().min(1) });
// The job's payload: which events to fulfil (the events' own payloads are in their rows).
const eventRefs = z.union([z.array(eventRef).min(1), eventRef]);

export interface ProcessStripeEventDeps {
  /** Fulfils the jobs that run at once together, on the worker pool. */
  fulfilment: FulfilmentBatcher;
  logger: Logger;
  metrics: Metrics;
}

export function processStripeEventsTask({ fulfilment, logger, metrics }: ProcessStripeEventDeps): Task {
  const report = resultReporter({ logger, metrics });
  return async (jobPayload, helpers) => {
    const parsed = eventRefs.safeParse(jobPayload);
    if (!parsed.success) {
      // Retrying cannot fix a malformed payload; log it and let the job complete.
      logger.error({ jobId: helpers.job.id }, 'process_stripe_event job without valid event ids');
      return;
    }
    const refs = Array.isArray(parsed.data) ? parsed.data : [parsed.data];
    const results = await fulfilment.fulfil(
      refs.map((ref) => ref.eventId),
      { retry: helpers.job.attempts > 1 },
    );
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
