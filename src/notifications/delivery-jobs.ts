// The graphile-worker jobs that carry deliveries: one job per DELIVERIES_PER_JOB deliveries
// written together, sent together (src/notifications/deliver.ts), so that a burst of outcomes pays
// a job's fetch, lease, record and completion once per batch rather than once per notification.
// A retry, a reclaim and a replay queue jobs the same way. Jobs carry no key: an attempt leases
// its delivery first, so a second job for one delivery (a dead worker's job that graphile-worker
// runs again after 4 hours, say) finds nothing to do.
import { sql, type RawBuilder } from 'kysely';

/** Stored in every queued delivery job, so it stays. */
export const DELIVER_TASK = 'deliver_notifications';

/**
 * Most deliveries in one job, all POSTed at once: with APP_WEBHOOK_CONCURRENCY jobs running, at
 * most this many times that requests to the apps are in flight per process.
 */
export const DELIVERIES_PER_JOB = 10;

/**
 * graphile_worker.add_jobs for the deliveries `rows` yields (delivery_id, run_at): a job per
 * DELIVERIES_PER_JOB of them due at the same time. A scalar subquery (the count of jobs added) for
 * a select list. None to add calls nothing: add_jobs notifies every listening worker, and the
 * commit of a notifying transaction waits for every other such commit in the database.
 */
export function addDeliveryJobs(rows: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(
    select count(*)::int from (
      select array(
        select row(${DELIVER_TASK}, json_build_object('deliveryIds', json_agg(delivery_id)), null, run_at, null, null, null, null)::graphile_worker.job_spec
        from (select delivery_id, run_at, (row_number() over (partition by run_at) - 1) / ${DELIVERIES_PER_JOB} as batch
              from (${rows}) as r(delivery_id, run_at)) as numbered
        group by run_at, batch) as specs
    ) as s, graphile_worker.add_jobs(s.specs)
    where cardinality(s.specs) > 0)`;
}
