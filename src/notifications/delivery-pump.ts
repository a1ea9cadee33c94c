// Delivering notifications: the outbox table is its own queue, relayed by a pump in each worker
// process. A batch is up to DELIVERIES_PER_BATCH deliveries that are due, leased in one statement
// (attempts + 1, leased_until, SKIP LOCKED: any number of processes pump at once), POSTed at once,
// and recorded in one statement, retries included (next_attempt_at). No transaction is held
// across the POSTs; APP_WEBHOOK_CONCURRENCY batches are in flight at most.
//
// Why not a graphile-worker job per batch: the delivery row already holds what a job would
// (attempts, when next, who has it), and the job cost more than the delivery. Adding it made every
// fulfilment commit a notifying one, which waits for every other such commit in the database, and
// its fetch scanned past the fulfilment backlog; a drain fulfilled at a quarter of its rate
// (docs/benchmarks.md, "Outcome notifications"). The price is a poll: a new notification waits up
// to POLL_MS when the pump is idle, and an idle process asks once per POLL_MS.
//
// A worker killed mid-attempt leaves leases that run out: the lease reclaim frees those deliveries
// (src/maintenance/lease-reclaim.ts) and the next batch takes them, so an attempt in flight is
// retried, never lost.
//
// An app that answers 429 (or 502/503/504) with Retry-After is overloaded or being deployed: the
// delivery's next attempt waits as long as it asks (capped, never less than its backoff), and so
// do the endpoint's other pending deliveries, not sent into an app that said it cannot take them.
//
// At least once, not exactly once: an app that took a notification and died before answering gets
// it again, with the same webhook-id and body; receivers deduplicate on webhook-id.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Database, DeliveryStatus } from '../db/schema.js';
import { describeError } from '../outcomes.js';
import type { Logger } from '../logger.js';
import { judgeProgress, type JobLoopStatus } from '../queue/job-loop-watchdog.js';
import { honouredRetryAfterMs, retryDelayMs } from './backoff.js';
import { endpointLabel } from './endpoint-label.js';
import { createSender, type AttemptResult } from './send.js';

/** Most deliveries leased, sent and recorded together. */
export const DELIVERIES_PER_BATCH = 10;
/** How often an idle pump looks for due deliveries. */
const POLL_MS = 500;
/**
 * Credits first, then the app told: a batch waits while what it gives way to (fulfilment, and the
 * webhooks' claims under ROLE=all) had a transaction open more than this share of the recent
 * past, looking again every GIVE_WAY_CHECK_MS, and goes after GIVE_WAY_MAX_WAIT_MS regardless. A
 * backlog draining or a burst of webhooks keeps them busier than that, so deliveries trickle
 * (a batch a second) and catch up after; a steady moderate rate does not, and they go at once.
 */
const GIVE_WAY_BUSY_SHARE = 0.5;
const GIVE_WAY_CHECK_MS = 20;
const GIVE_WAY_MAX_WAIT_MS = 1_000;
/**
 * A lease outlives its attempt's timeout by this much, for the record to be written. Were a stalled
 * process to record later still, the delivery would at worst be sent twice: at least once holds.
 */
const LEASE_MARGIN_MS = 5_000;

export interface DeliveryConfig {
  readonly appWebhookSecrets: readonly string[];
  readonly appWebhookTimeoutMs: number;
  readonly appWebhookMaxAttempts: number;
  readonly appWebhookConcurrency: number;
}

/** What an attempt ended in, as the metrics count it (src/metrics/metrics.ts notificationAttempts). */
export type AttemptObserver = (labels: { endpoint: string; type: string; outcome: 'delivered' | 'retry' | 'failed' }, seconds: number) => void;

export interface PumpDeps {
  /** The notifications pool. */
  db: Kysely<Database>;
  config: DeliveryConfig;
  logger: Logger;
  observe: AttemptObserver;
  /** What each batch gives way to while it is busy: fulfilment, and the webhooks' claims under ROLE=all. */
  givesWayTo?: readonly { busyShare(): number }[];
  /** Tests of a stall: its threshold (src/queue/job-loop-watchdog.ts). */
  stallAfterMs?: number;
  /** Tests of throttling: the backoff after the n-th failed attempt, shorter than backoff.ts's. */
  retryDelayMs?: (attempt: number) => number;
}

export interface DeliveryPump {
  /** Settles once stopped. */
  readonly promise: Promise<void>;
  /** Takes no new batch and waits for those in flight (each bounded by its timeout). */
  stop(): Promise<void>;
  status(): JobLoopStatus;
}

interface LeasedDelivery {
  delivery_id: string;
  endpoint: string;
  attempts: number;
  notification_id: string;
  type: string;
  body: string;
  /** The outbox write's span (sql/0033): each attempt's span is its child. */
  trace_context: string | null;
}

interface Recorded {
  delivery: LeasedDelivery;
  result: AttemptResult;
  status: DeliveryStatus;
  error: string | null;
  retryInMs: number;
  /** The app's Retry-After, as honoured: its endpoint's other deliveries wait as long. */
  holdMs: number | null;
}

export function startDeliveryPump({
  db,
  config,
  logger,
  observe,
  givesWayTo = [],
  stallAfterMs,
  retryDelayMs: backoff = retryDelayMs,
}: PumpDeps): DeliveryPump {
  const sender = createSender({ secrets: config.appWebhookSecrets, timeoutMs: config.appWebhookTimeoutMs });
  const leaseMs = config.appWebhookTimeoutMs + LEASE_MARGIN_MS;
  const inFlight = new Set<Promise<void>>();
  const stopping = new AbortController();
  let lastProgress = performance.now();
  let lastError: string | undefined;

  const deliver = async (leased: LeasedDelivery[]) => {
    const attempts = await Promise.all(
      leased.map(async (delivery) =>
        outcomeOf(
          delivery,
          await sender.send(delivery.endpoint, {
            id: delivery.notification_id,
            body: delivery.body,
            attempt: delivery.attempts,
            traceContext: delivery.trace_context,
          }),
          config.appWebhookMaxAttempts,
          backoff,
        ),
      ),
    );
    await recordAttempts(db, attempts);
    lastProgress = performance.now();
    for (const { delivery, result, status, error, holdMs } of attempts) {
      const endpoint = endpointLabel(delivery.endpoint);
      observe({ endpoint, type: delivery.type, outcome: status === 'pending' ? 'retry' : status }, result.durationMs / 1000);
      const line = {
        notificationId: delivery.notification_id,
        type: delivery.type,
        endpoint,
        attempt: delivery.attempts,
        statusCode: result.statusCode,
        durationMs: result.durationMs,
        ...(holdMs !== null && { retryAfterSeconds: holdMs / 1000 }),
      };
      if (status === 'delivered') logger.info(line, 'notification delivered');
      else if (status === 'failed') logger.error({ ...line, error }, 'notification failed: no attempt is left (npm run notifications -- --status failed)');
      else logger.warn({ ...line, error }, 'notification delivery failed: will retry');
    }
  };

  const giveWay = async () => {
    const deadline = performance.now() + GIVE_WAY_MAX_WAIT_MS;
    while (givesWayTo.some((work) => work.busyShare() > GIVE_WAY_BUSY_SHARE) && performance.now() < deadline && !stopping.signal.aborted) {
      await sleep(GIVE_WAY_CHECK_MS);
    }
  };

  const pump = async () => {
    while (!stopping.signal.aborted) {
      if (inFlight.size >= config.appWebhookConcurrency) {
        await Promise.race(inFlight);
        continue;
      }
      await giveWay();
      let leased: LeasedDelivery[];
      try {
        leased = await leaseDue(db, leaseMs);
        lastProgress = performance.now();
        lastError = undefined;
      } catch (error) {
        // The database away: the leases of what is in flight run out, the sweep frees them.
        lastError = describeError(error);
        leased = [];
      }
      if (leased.length === 0) {
        await sleep(POLL_MS, undefined, { signal: stopping.signal }).catch(() => {});
        continue;
      }
      const batch = deliver(leased)
        .catch(
          (error: unknown) =>
            void logger.error(
              { err: error, deliveries: leased.length },
              'recording notification attempts failed: their leases run out and they are sent again',
            ),
        )
        .finally(() => inFlight.delete(batch));
      inFlight.add(batch);
    }
    await Promise.allSettled(inFlight);
    sender.close();
  };

  const promise = pump();
  return {
    promise,
    async stop() {
      stopping.abort();
      await promise;
    },
    status: () => judgeProgress({ runner: 'notifications', ageMs: performance.now() - lastProgress, running: inFlight.size, lastError, stallAfterMs }),
  };
}

/** Leases up to DELIVERIES_PER_BATCH due deliveries, oldest due first; none held by another attempt. */
async function leaseDue(db: Kysely<Database>, leaseMs: number): Promise<LeasedDelivery[]> {
  const { rows } = await sql<LeasedDelivery>`
    with due as (
      select delivery_id from notification_deliveries
      where status = 'pending' and leased_until is null and next_attempt_at <= now()
      order by next_attempt_at
      limit ${DELIVERIES_PER_BATCH}
      for update skip locked
    )
    update notification_deliveries d
    set attempts = d.attempts + 1, leased_until = now() + make_interval(secs => ${leaseMs}::float8 / 1000), last_attempt_at = now()
    from due, notifications n
    where d.delivery_id = due.delivery_id and n.notification_id = d.notification_id
    returning d.delivery_id, d.endpoint, d.attempts, n.notification_id, n.type, n.body, n.trace_context`.execute(db);
  return rows;
}

/**
 * Where the delivery goes next: delivered, failed (its attempts ran out, or the app answered 410
 * Gone for it), or pending until its retry: after its backoff, or the app's Retry-After if later.
 *
 * A throttled attempt counts as one of APP_WEBHOOK_MAX_ATTEMPTS. Its wait is never shorter than
 * the backoff, so throttling only stretches a delivery's life beyond the ~3 days the attempts
 * promise (an app asking for an hour eleven times has used eleven of 23); it never shortens it.
 * Not counted, an app answering 429 for good would keep its notifications pending for good, out
 * of the dead letter that shows ops something is wrong.
 */
function outcomeOf(delivery: LeasedDelivery, result: AttemptResult, maxAttempts: number, backoff: (attempt: number) => number): Recorded {
  const gone = result.statusCode === 410;
  const status: DeliveryStatus = result.delivered ? 'delivered' : gone || delivery.attempts >= maxAttempts ? 'failed' : 'pending';
  const holdMs = result.retryAfterMs === null ? null : honouredRetryAfterMs(result.retryAfterMs);
  const error = gone
    ? `${result.error ?? 'HTTP 410'} (410 Gone: not retried)`
    : holdMs === null
      ? result.error
      : `${result.error ?? `HTTP ${result.statusCode}`} (Retry-After: ${holdMs / 1000} s${holdMs < (result.retryAfterMs ?? 0) ? ', capped' : ''})`;
  return { delivery, result, status, error, retryInMs: Math.max(backoff(delivery.attempts), holdMs ?? 0), holdMs };
}

/**
 * Records the attempts and moves each delivery on, in one statement. Only the attempt that holds
 * the lease moves it: `attempts` is the lease's number. An endpoint that answered with a
 * Retry-After has its other pending deliveries put off as long.
 */
async function recordAttempts(db: Kysely<Database>, attempts: readonly Recorded[]): Promise<void> {
  const rows = JSON.stringify(
    attempts.map(({ delivery, result, status, error, retryInMs, holdMs }) => ({
      id: delivery.delivery_id,
      endpoint: delivery.endpoint,
      hold_ms: holdMs,
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
      select id, endpoint, hold_ms, attempt, status, status_code, error, duration_ms, retry_in_ms from jsonb_to_recordset(${rows}::jsonb)
        as r(id text, endpoint text, hold_ms int, attempt int, status text, status_code int, error text, duration_ms int, retry_in_ms int)
    ), logged as (
      insert into notification_attempts (delivery_id, started_at, duration_ms, status_code, error)
      select id, now() - make_interval(secs => duration_ms::float8 / 1000), duration_ms, status_code, error from recorded
    ), held as (
      -- Only deliveries no attempt holds, so never a row the update below moves. SKIP LOCKED: one
      -- that another pump is leasing right now goes (its own answer will say), and two endpoints
      -- held back at once by two pumps never wait on each other's rows.
      select d.delivery_id, h.until from notification_deliveries d
      join (select endpoint, max(now() + make_interval(secs => hold_ms::float8 / 1000)) as until from recorded where hold_ms > 0 group by endpoint) h
        on d.endpoint = h.endpoint
      where d.status = 'pending' and d.leased_until is null and d.next_attempt_at < h.until
      for update of d skip locked
    ), put_off as (
      update notification_deliveries d set next_attempt_at = held.until from held where d.delivery_id = held.delivery_id
    )
    update notification_deliveries d set
      status = r.status,
      leased_until = null,
      next_attempt_at = case when r.status = 'pending' then now() + make_interval(secs => r.retry_in_ms::float8 / 1000) else d.next_attempt_at end,
      last_status_code = r.status_code,
      last_error = r.error,
      delivered_at = case when r.status = 'delivered' then now() end
    from recorded r
    -- The ids again, as an array: the planner then finds the rows by the primary key. Joined with
    -- the recordset alone, it guesses from statistics taken while the table was small and hashes
    -- every pending delivery, a cost that grows with the backlog (tens of ms at 20,000).
    where d.delivery_id = any(${attempts.map(({ delivery }) => delivery.delivery_id)}::text[])
      and d.delivery_id = r.id and d.attempts = r.attempt and d.status = 'pending'`.execute(db);
}
