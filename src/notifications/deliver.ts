// Delivering notifications: the `deliver_notifications` task, one attempt of each delivery a job
// carries (up to DELIVERIES_PER_JOB, written together), sent at once. No transaction is held
// across the POSTs. The job leases its deliveries first (attempts + 1, leased_until) in one
// statement, sends, and records what came back in one statement with the retries' jobs. A worker
// killed mid-attempt leaves leases that run out: the sweep re-queues those deliveries
// (reclaim.ts), so an attempt in flight is retried, never lost. Two attempts of one delivery never
// overlap: a lease still running turns a second job away, and so does a retry not yet due.
//
// At least once, not exactly once: an app that took a notification and died before answering gets
// it again, with the same webhook-id and body; receivers deduplicate on webhook-id.
import type { Task } from 'graphile-worker';
import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database, DeliveryStatus } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { retryDelayMs } from './backoff.js';
import { addDeliveryJobs } from './delivery-jobs.js';
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

interface Recorded {
  delivery: LeasedDelivery;
  result: AttemptResult;
  status: DeliveryStatus;
  error: string | null;
  retryInMs: number;
}

const deliveryPayload = z.object({ deliveryIds: z.array(z.string()).min(1) });

/** What an attempt ended in, as the metrics count it (src/metrics/metrics.ts notificationAttempts). */
export type AttemptObserver = (labels: { endpoint: string; type: string; outcome: 'delivered' | 'retry' | 'failed' }, seconds: number) => void;

export interface DeliverDeps {
  /** The notifications pool. */
  db: Kysely<Database>;
  config: DeliveryConfig;
  logger: Logger;
  observe: AttemptObserver;
  /** Awaited before each batch: where the process also answers webhooks, their claims go first (src/service.ts). */
  yieldTo?: () => Promise<void>;
}

export function deliverNotificationsTask({ db, config, logger, observe, yieldTo }: DeliverDeps): Task {
  const sign = createSigner(config.appWebhookSecrets);
  return async (payload) => {
    const job = deliveryPayload.safeParse(payload);
    if (!job.success) return void logger.error({ payload }, 'delivery job without delivery ids: dropped');
    await yieldTo?.();
    // Delivered, failed, replayed into another job, not due yet, or an attempt in flight: not leased.
    const leased = await leaseDeliveries(db, job.data.deliveryIds, config.appWebhookTimeoutMs + LEASE_MARGIN_MS);
    if (leased.length === 0) return;
    const attempts = await Promise.all(
      leased.map(async (delivery) => outcomeOf(delivery, await sendNotification(delivery.endpoint, { id: delivery.notification_id, body: delivery.body }, { sign, timeoutMs: config.appWebhookTimeoutMs }), config.appWebhookMaxAttempts)),
    );
    await recordAttempts(db, attempts);
    for (const { delivery, result, status, error } of attempts) {
      const endpoint = endpointLabel(delivery.endpoint);
      observe({ endpoint, type: delivery.type, outcome: status === 'pending' ? 'retry' : status }, result.durationMs / 1000);
      const line = { notificationId: delivery.notification_id, type: delivery.type, endpoint, attempt: delivery.attempts, statusCode: result.statusCode, durationMs: result.durationMs };
      if (status === 'delivered') logger.debug(line, 'notification delivered');
      else if (status === 'failed') logger.error({ ...line, error }, 'notification failed: no attempt is left (npm run notifications -- --status failed)');
      else logger.warn({ ...line, error }, 'notification delivery failed: will retry');
    }
  };
}

async function leaseDeliveries(db: Kysely<Database>, deliveryIds: readonly string[], leaseMs: number): Promise<LeasedDelivery[]> {
  const { rows } = await sql<LeasedDelivery>`
    update notification_deliveries d
    set attempts = d.attempts + 1, leased_until = now() + make_interval(secs => ${leaseMs}::float8 / 1000), last_attempt_at = now()
    from notifications n
    where d.delivery_id = any(${deliveryIds}::text[]) and n.notification_id = d.notification_id
      and d.status = 'pending' and d.next_attempt_at <= now() and (d.leased_until is null or d.leased_until < now())
    returning d.delivery_id, d.endpoint, d.attempts, n.notification_id, n.type, n.body`.execute(db);
  return rows;
}

/**
 * Where the delivery goes next: delivered, failed (its attempts ran out, or the app answered 410
 * Gone for it), or pending until its retry.
 */
function outcomeOf(delivery: LeasedDelivery, result: AttemptResult, maxAttempts: number): Recorded {
  const gone = result.statusCode === 410;
  const status: DeliveryStatus = result.delivered ? 'delivered' : gone || delivery.attempts >= maxAttempts ? 'failed' : 'pending';
  const error = gone ? `${result.error ?? 'HTTP 410'} (410 Gone: not retried)` : result.error;
  return { delivery, result, status, error, retryInMs: retryDelayMs(delivery.attempts) };
}

/**
 * Records the attempts and moves each delivery on, and queues the retries, in one statement. Only
 * the attempt that holds the lease records: `attempts` is the lease's number.
 */
async function recordAttempts(db: Kysely<Database>, attempts: readonly Recorded[]): Promise<void> {
  const rows = JSON.stringify(
    attempts.map(({ delivery, result, status, error, retryInMs }) => ({
      id: delivery.delivery_id,
      attempt: delivery.attempts,
      status,
      status_code: result.statusCode,
      error,
      duration_ms: result.durationMs,
      retry_in_ms: retryInMs,
    })),
  );
  await sql`
    with recorded as (
      select * from jsonb_to_recordset(${rows}::jsonb)
        as r(id text, attempt int, status text, status_code int, error text, duration_ms int, retry_in_ms int)
    ), logged as (
      insert into notification_attempts (delivery_id, started_at, duration_ms, status_code, error)
      select id, now() - make_interval(secs => duration_ms::float8 / 1000), duration_ms, status_code, error from recorded
    ), moved as (
      update notification_deliveries d set
        status = r.status,
        leased_until = null,
        next_attempt_at = case when r.status = 'pending' then now() + make_interval(secs => r.retry_in_ms::float8 / 1000) else d.next_attempt_at end,
        last_status_code = r.status_code,
        last_error = r.error,
        delivered_at = case when r.status = 'delivered' then now() end
      from recorded r
      where d.delivery_id = r.id and d.attempts = r.attempt and d.status = 'pending'
      returning d.delivery_id, d.status, d.next_attempt_at
    )
    select ${addDeliveryJobs(sql`select delivery_id, next_attempt_at from moved where status = 'pending'`)}`.execute(db);
}
