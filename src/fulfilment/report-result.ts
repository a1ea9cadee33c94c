// What fulfilment tells of each event it fulfilled: the metrics the outcome counts in, one log
// line per outcome, and whether the outcome is a retry. The fulfilment task
// (tasks/process_stripe_event.ts) reports every event of its job through here.
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { FulfilResult } from './fulfil-event.js';

/** Logs and counts one event's result; returns the error that should make it retry. */
export type ReportResult = (eventId: string, jobId: string, result: FulfilResult) => Error | undefined;

export function resultReporter({
  logger,
  metrics,
}: {
  logger: Logger;
  metrics: Pick<Metrics, 'handlerFailures' | 'eventWaits' | 'eventsFinished' | 'receivedToFinished'>;
}): ReportResult {
  return (eventId, jobId, result) => {
    const fields = { eventId, jobId, ...('type' in result ? { type: result.type, attempt: result.attempt } : {}), status: result.status };
    if ('wait' in result && result.wait !== undefined) {
      // Waiting for what Stripe will deliver later (an invoice before the checkout that links its
      // subscription) is the normal course of events, not a failure: no retry, no stack, told
      // once at info and counted apart, so that failure alerts stay quiet for it.
      if (result.status === 'processing') {
        metrics.eventWaits.inc({ type: result.type });
        const line = { ...fields, reason: result.wait.reason, waitUntil: result.wait.until.toISOString() };
        if (result.wait.first) logger.info(line, 'event waits for what it needs; it runs again when that arrives');
        else logger.debug(line, 'event woken, still waiting');
        return undefined;
      }
      metrics.eventsFinished.inc({ type: result.type, status: result.status });
      metrics.receivedToFinished.observe({ type: result.type }, (Date.now() - result.receivedAt.getTime()) / 1000);
      const ended = { ...fields, reason: result.wait.reason };
      if (result.status === 'failed') logger.error(ended, 'event failed: what it waited for never came; replay after fixing the cause');
      else logger.warn(ended, 'event ignored: what it waited for never came');
      return undefined;
    }
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
      logger.warn({ ...fields, err: result.error }, 'event handler failed, will retry');
      return result.error;
    }
    // 'missing' and 'already_finished' are a second job for the same event (a replay or a
    // reclaim racing a late commit): nothing was done, which is the point.
    logger.info(fields, 'type' in result ? 'event fulfilled' : 'nothing to do for this event');
    return undefined;
  };
}
