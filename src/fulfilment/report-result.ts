// What fulfilment tells of each event it fulfilled: the metrics the outcome counts in, one log
// line per outcome, and whether the outcome is a retry. The fulfilment task
// (tasks/process_stripe_event.ts) reports every event of its job through here.
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { FulfilResult } from './fulfil-event.js';
import { RetryLaterError } from './handler.js';

/** Logs and counts one event's result; returns the error that should make it retry. */
export type ReportResult = (eventId: string, jobId: string, result: FulfilResult) => Error | undefined;

export function resultReporter({ logger, metrics }: { logger: Logger; metrics: Pick<Metrics, 'handlerFailures' | 'eventWaits' | 'eventsFinished' | 'receivedToFinished'> }): ReportResult {
  return (eventId, jobId, result) => {
    const fields = { eventId, jobId, ...('type' in result ? { type: result.type, attempt: result.attempt } : {}), status: result.status };
    // A wait (RetryLaterError) that will be retried is the normal course of events that Stripe
    // delivers out of order (an invoice before the checkout that links its subscription), not a
    // failure: counted and logged apart, so that failure alerts stay quiet for it.
    const waiting = result.status === 'processing' && 'error' in result && result.error instanceof RetryLaterError;
    if ('type' in result) {
      if (waiting) metrics.eventWaits.inc({ type: result.type });
      else if (result.error) metrics.handlerFailures.inc({ type: result.type, retry: result.status === 'processing' ? 'yes' : 'no' });
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
      if (waiting) logger.info({ ...fields, reason: result.error.message }, 'event waits for what it needs, will retry');
      else logger.warn({ ...fields, err: result.error }, 'event handler failed, will retry');
      return result.error;
    }
    // 'missing' and 'already_finished' are a second job for the same event (a replay or a
    // reclaim racing a late commit): nothing was done, which is the point.
    logger.info(fields, 'type' in result ? 'event fulfilled' : 'nothing to do for this event');
    return undefined;
  };
}
