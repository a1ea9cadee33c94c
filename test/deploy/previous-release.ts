// The release before job keys, the parts of it that meet the new one in a rolling deploy: its
// start-up migrations (sql/0001–0006, then graphile-worker 0.17's own) and the claim statement it
// runs for every webhook (src/events/event-store.ts and enqueue.ts at commit 750fd49, the same SQL
// written out in one piece). Its jobs have no key, carry [{ eventId }, ...] and are added in the
// transaction that sets enqueued_at.
import { runMigrations as runPreviousWorkerMigrations, Logger as PreviousLogger } from 'graphile-worker-0.17';
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Database } from '../../src/db/schema.js';
import { migrate } from '../../src/db/migrate.js';
import type { IncomingEvent } from '../../src/events/event-store.js';
import type { Logger } from '../../src/logger.js';
import { serviceMigrations } from '../../src/modules/index.js';

export const PREVIOUS_RELEASE_MIGRATIONS = 6;
export const silentPreviousLogger = new PreviousLogger(() => () => {});

/** Starts the way the previous release started on an empty database. */
export async function migrateAsPreviousRelease(pool: pg.Pool, logger: Logger): Promise<void> {
  const migrations = (await serviceMigrations()).filter((m) => m.version <= PREVIOUS_RELEASE_MIGRATIONS);
  await migrate(pool, logger, migrations, {
    runWorkerMigrations: (p) => runPreviousWorkerMigrations({ pgPool: p, logger: silentPreviousLogger }),
  });
}

/** Claims events and adds their keyless batch jobs in one statement, as the previous release did. */
export async function claimAsPreviousRelease(db: Kysely<Database>, events: readonly IncomingEvent[], maxAttempts: number): Promise<void> {
  const batch = `[${events
    .map((e) => {
      const fields = JSON.stringify({ event_id: e.eventId, type: e.type, object_id: e.objectId, livemode: e.livemode, stripe_created_at: e.stripeCreatedAt });
      return `${fields.slice(0, -1)},"payload":${e.rawBody.toString()}}`;
    })
    .join(',')}]`;
  await sql`
    with claimed as (
      insert into stripe_events (event_id, type, object_id, livemode, stripe_created_at, payload)
      select event_id, type, object_id, livemode, stripe_created_at, payload
      from jsonb_to_recordset(${batch}::jsonb)
        as incoming(event_id text, type text, object_id text, livemode boolean, stripe_created_at timestamptz, payload jsonb)
      on conflict (event_id) do nothing
      returning event_id
    ), jobs as (
      select count(*) as added
      from graphile_worker.add_jobs(array(
        select row('process_stripe_event', json_agg(json_build_object('eventId', id)), null, null, ${maxAttempts}::int, null, null, null)::graphile_worker.job_spec
        from (select id, (row_number() over () - 1) / 25 as job from (select event_id from claimed) as ids(id)) as numbered
        group by job))
    )
    select array(select event_id from claimed) as claimed, (select added from jobs) as jobs`.execute(db);
}
