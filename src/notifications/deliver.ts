// Delivering notifications: the `deliver_notification` task, one attempt of one delivery per job.
// No transaction is held across the POST. An attempt takes a lease on its delivery row first
// (attempts + 1, leased_until), commits, sends, and records what came back in one statement with
// the next attempt's job. A worker killed mid-attempt leaves a lease that runs out: the sweep
// re-queues that delivery (reclaim.ts), so an attempt in flight is retried, never lost. Two
// attempts of one delivery never overlap: a lease still running turns a second job away.
//
// At least once, not exactly once: an app that took a notification and died before answering gets
// it again, with the same webhook-id and body; receivers deduplicate on webhook-id.
import type { Task } from 'graphile-worker';
import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database, DeliveryStatus } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { retryDelayMs } from './backoff.js';
import { addDeliveryJob } from './delivery-jobs.js';
import { endpointLabel } from './endpoint-label.js';
import { createSigner, sendNotification, type AttemptResult } from './send.js';

/**
 * A lease outlives its attempt's timeout by this much, for the record to be written. Were a stalled
 * process to record later still, the delivery would at worst be sent twice: at least once holds.
 */
const LEASE_MARGIN_MS = 5_000;

export interface DeliveryConfig {
  readonly appWebhookSecrets: readonly string[];
  readonly appWebhookTimeoutMs: number;
  readonly appWebhookMaxAttempts: number;
}

interface LeasedDelivery {
  delivery_id: string;
  endpoint: string;
  attempts: number;
  notification_id: string;
  type: string;
  body: string;
}

const deliveryPayload = z.object({ deliveryId: z.string() });

/** What an attempt ended in, as the metrics count it (src/metrics/metrics.ts notificationAttempts). */
export type AttemptObserver = (labels: { endpoint: string; type: string; outcome: 'delivered' | 'retry' | 'failed' }, seconds: number) => void;

export function deliverNotificationTask(deps: { db: Kysely<Database>; config: DeliveryConfig; logger: Logger; observe: AttemptObserver }): Task {
  const { db, config, logger, observe } = deps;
  const sign = createSigner(config.appWebhookSecrets);
  return async (payload) => {
    const job = deliveryPayload.safeParse(payload);
    if (!job.success) return void logger.error({ payload }, 'delivery job without a delivery id: dropped');
    const delivery = await leaseDelivery(db, job.data.deliveryId, config.appWebhookTimeoutMs + LEASE_MARGIN_MS);
    // Delivered, failed, replayed into another job, or an attempt of it still in flight.
    if (!delivery) return;
    const result = await sendNotification(delivery.endpoint, { id: delivery.notification_id, body: delivery.body }, { sign, timeoutMs: config.appWebhookTimeoutMs });
    const status = await recordAttempt(db, delivery, result, config.appWebhookMaxAttempts);
    const endpoint = endpointLabel(delivery.endpoint);
    observe({ endpoint, type: delivery.type, outcome: status === 'pending' ? 'retry' : status }, result.durationMs / 1000);
    const line = { notificationId: delivery.notification_id, type: delivery.type, endpoint, attempt: delivery.attempts, statusCode: result.statusCode, durationMs: result.durationMs };
    if (status === 'delivered') logger.debug(line, 'notification delivered');
    else if (status === 'failed') logger.error({ ...line, error: result.error }, 'notification failed: its attempts ran out (npm run notifications -- --status failed)');
    else logger.warn({ ...line, error: result.error }, 'notification delivery failed: will retry');
  };
}

async function leaseDelivery(db: Kysely<Database>, deliveryId: string, leaseMs: number): Promise<LeasedDelivery | undefined> {
  const { rows } = await sql<LeasedDelivery>`
    update notification_deliveries d
    set attempts = d.attempts + 1, leased_until = now() + make_interval(secs => ${leaseMs}::float8 / 1000), last_attempt_at = now()
    from notifications n
    where d.delivery_id = ${deliveryId} and n.notification_id = d.notification_id
      and d.status = 'pending' and (d.leased_until is null or d.leased_until < now())
    returning d.delivery_id, d.endpoint, d.attempts, n.notification_id, n.type, n.body`.execute(db);
  return rows[0];
}

/**
 * Records the attempt and moves the delivery on: delivered, failed (its attempts ran out, or the
 * app answered 410 Gone for it), or pending with its next attempt queued, all in one statement.
 * Only the attempt that holds the lease records: `attempts` is the lease's number.
 */
async function recordAttempt(db: Kysely<Database>, delivery: LeasedDelivery, result: AttemptResult, maxAttempts: number): Promise<DeliveryStatus> {
  const gone = result.statusCode === 410;
  const status: DeliveryStatus = result.delivered ? 'delivered' : gone || delivery.attempts >= maxAttempts ? 'failed' : 'pending';
  const error = gone ? `${result.error ?? 'HTTP 410'} (410 Gone: not retried)` : result.error;
  const retryInMs = retryDelayMs(delivery.attempts);
  await sql`
    with attempt as (
      insert into notification_attempts (delivery_id, started_at, duration_ms, status_code, error)
      values (${delivery.delivery_id}, now() - make_interval(secs => ${result.durationMs}::float8 / 1000), ${result.durationMs}, ${result.statusCode}, ${error})
    ), moved as (
      update notification_deliveries set
        status = ${status},
        leased_until = null,
        next_attempt_at = now() + make_interval(secs => ${retryInMs}::float8 / 1000),
        last_status_code = ${result.statusCode},
        last_error = ${error},
        delivered_at = ${status === 'delivered' ? sql`now()` : null}
      where delivery_id = ${delivery.delivery_id} and attempts = ${delivery.attempts} and status = 'pending'
      returning delivery_id, status
    )
    select ${addDeliveryJob(sql`delivery_id`, retryInMs)} from moved where status = 'pending'`.execute(db);
  return status;
}
