// The graphile-worker jobs that carry deliveries: one per delivery, keyed by it. The key is what
// lets a reclaim replace the job of a worker that died mid-attempt: graphile-worker keeps a dead
// worker's job locked for 4 hours, and adding a job with its key retires that one (its attempts
// are spent) and queues a fresh one. Run by src/notifications/deliver.ts on its own runner.
import { sql, type RawBuilder } from 'kysely';

/** Stored in every queued delivery job, so it stays. */
export const DELIVER_TASK = 'deliver_notification';

/** The job key of a delivery, as SQL over its id. */
export const deliveryJobKey = (deliveryId: RawBuilder<unknown>): RawBuilder<string> => sql<string>`'notification_delivery:' || ${deliveryId}`;

/** Queues the delivery's next attempt, `inMs` from now; a job of the same delivery that has not started is moved. */
export function addDeliveryJob(deliveryId: RawBuilder<unknown>, inMs: RawBuilder<unknown> | number = 0): RawBuilder<unknown> {
  return sql`graphile_worker.add_job(${DELIVER_TASK}, json_build_object('deliveryId', ${deliveryId}),
    run_at => now() + make_interval(secs => ${inMs}::float8 / 1000), job_key => ${deliveryJobKey(deliveryId)})`;
}
