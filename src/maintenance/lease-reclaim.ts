// The sweep's discipline for deliveries: an attempt whose worker died (kill -9, OOM, a container
// replaced mid-POST) leaves its lease behind. Every SWEEP_CRON tick this frees each delivery whose
// lease ran out, due at once, for the next batch of any pump (src/notifications/delivery-pump.ts).
// The attempt that was cut short counts as one, as a reclaim counts against an event's attempts:
// a notification whose every attempt kills its worker ends 'failed' rather than looping for good.
// SKIP LOCKED: any number of runs may overlap.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { MaintenanceService } from './maintenance-service.js';

/** graphile-worker's identifier for the reclaim's task: stored in every queued job, so it stays. */
const RECLAIM_TASK = 'reclaim_notification_deliveries';
/** Rows per statement (per transaction), until a batch comes back short. */
const RECLAIM_BATCH_ROWS = 100;

const INTERRUPTED = 'interrupted: the worker stopped during the attempt';

/**
 * The reclaim as the worker runs it: task `reclaim_notification_deliveries`
 * (tasks/reclaim_notification_deliveries.ts) on the sweep's schedule, one attempt per tick.
 */
export const leaseReclaimService: MaintenanceService<'sweepCron' | 'appWebhookMaxAttempts'> = {
  identifier: RECLAIM_TASK,
  settings: ['sweepCron', 'appWebhookMaxAttempts'],
  crontab: ({ sweepCron }) => `${sweepCron} ${RECLAIM_TASK} ?max=1`,
};

/** One run: reclaims every lapsed lease, and logs a line only when there was one. */
export async function reclaimLeases(db: Kysely<Database>, { maxAttempts, logger }: { maxAttempts: number; logger: Logger }): Promise<void> {
  const reclaimed = await reclaimDeliveries(db, maxAttempts);
  if (reclaimed > 0) logger.warn({ reclaimed }, 'notification deliveries whose worker died were freed for another attempt');
}

/**
 * Frees every delivery whose attempt's lease ran out, in batches, or fails it when that was its
 * last attempt. Returns how many it took.
 */
export async function reclaimDeliveries(db: Kysely<Database>, maxAttempts: number): Promise<number> {
  let reclaimed = 0;
  for (;;) {
    // MATERIALIZED: the locked batch is chosen once; folded into the update, the SKIP LOCKED
    // subquery could be run again and take more rows than its limit (PostgreSQL bug #15715).
    const { rows } = await sql<{ taken: number }>`
      with lapsed as materialized (
        select delivery_id from notification_deliveries
        where leased_until < now() and status = 'pending'
        order by leased_until
        limit ${RECLAIM_BATCH_ROWS}
        for update skip locked
      ), freed as (
        update notification_deliveries d set
          leased_until = null,
          next_attempt_at = now(),
          status = case when d.attempts >= ${maxAttempts} then 'failed' else 'pending' end,
          last_status_code = null,
          last_error = case when d.attempts >= ${maxAttempts} then ${`${INTERRUPTED}: it was the last`} else d.last_error end
        from lapsed where d.delivery_id = lapsed.delivery_id
        returning d.delivery_id, d.status
      ), interrupted as (
        insert into notification_attempts (delivery_id, started_at, duration_ms, status_code, error)
        select d.delivery_id, d.last_attempt_at, (extract(epoch from now() - d.last_attempt_at) * 1000)::int, null,
               case when f.status = 'failed' then ${`${INTERRUPTED}: it was the last`} else ${`${INTERRUPTED}, which was retried`} end
        from notification_deliveries d join freed f using (delivery_id)
      )
      select count(*)::int as taken from freed`.execute(db);
    const taken = rows[0]?.taken ?? 0;
    reclaimed += taken;
    if (taken < RECLAIM_BATCH_ROWS) return reclaimed;
  }
}
