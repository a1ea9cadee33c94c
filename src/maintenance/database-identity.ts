// The database identity watch: notices that the database under the service is not the one it
// wrote to before (an asynchronous failover, a restore from a backup or a dump) and queues a
// reconcile at once, rather than at the next RECONCILE_CRON tick. Events that got their 2xx from
// the old database and never reached the new one are lost to the webhook: Stripe does not resend
// them, and only its Events API still has them (reconcile.ts).
//
// The identity is (system identifier, current timeline, database oid):
// - a standby promoted by a failover keeps its primary's system identifier but starts a new
//   timeline, as does a point-in-time recovery from a base backup;
// - a dump restored into another cluster has that cluster's system identifier;
// - a dump restored into a fresh database of the same server keeps both, and has a new oid.
// database_identity (sql/0025) holds the one last recorded. Replicated or dumped with everything
// else, it still names the old database after any of those, so the two differ.
//
// Checked when the worker starts, on every SWEEP_CRON tick (task `check_database_identity`, one
// query) and when graphile-worker's LISTEN connection comes back after losing the database
// (watchDatabaseIdentity): a failover without a restart is caught as soon as the worker
// reconnects. A change also queues a sweep soon (sweep.ts): the jobs in flight at a failover stay
// locked.
import type { WorkerEvents } from 'graphile-worker';
import { sql, type Kysely, type Transaction } from 'kysely';
import { isInsufficientPrivilege } from '../db/pg-errors.js';
import type { Database } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { addJob } from '../queue/job-queue.js';
import type { MaintenanceService } from './maintenance-service.js';
import { forgetCursors } from './reconcile-cursors.js';
import { RECONCILE_TASK } from './reconcile.js';
import { queueSweepSoon } from './sweep.js';

/** graphile-worker's identifier for the watch's task: stored in every queued job, so it stays. */
const IDENTITY_TASK = 'check_database_identity';
/**
 * The reconcile a change queues has this key: two workers that notice one change at once queue
 * one job (the row's compare-and-set below already lets only one of them see the change).
 */
const RECONCILE_JOB_KEY = 'reconcile_events:database_identity';
/**
 * graphile-worker backs off exp(attempt) seconds: ten attempts span about three and a half hours,
 * through a Stripe outage that often coincides with a bad day.
 */
const RECONCILE_JOB_ATTEMPTS = 10;
/**
 * After a change, the sweep reclaims what was fetched before it: a live worker takes its events'
 * row locks (the sweep's liveness signal) within milliseconds of fetching a job, and a fetched
 * batch waits in graphile-worker's local queue only while a slot is busy.
 */
const SWEEP_AFTER_CHANGE_SECONDS = 15;

export interface DatabaseIdentity {
  /** pg_control_system()'s, as text (int8); null when the role may not call it. */
  systemIdentifier: string | null;
  /** null when the role may not read it. */
  timelineId: number | null;
  databaseOid: number;
}

export interface IdentityCheck {
  /** The identity recorded before; null at the first check on this database. */
  previous: DatabaseIdentity | null;
  current: DatabaseIdentity;
  /** The recorded identity was replaced (or recorded for the first time). */
  changed: boolean;
  /** A reconcile job was queued. */
  reconcileQueued: boolean;
  /** A sweep of the jobs fetched before the change was queued (SWEEP_AFTER_CHANGE_SECONDS from now). */
  sweepQueued: boolean;
}

export interface IdentityCheckOptions {
  /** Queue a reconcile on a change; false where it cannot run (no STRIPE_SECRET_KEY). */
  reconcile: boolean;
  logger?: Logger;
}

/**
 * The watch as the worker runs it: task `check_database_identity`
 * (tasks/check_database_identity.ts) on the sweep's schedule, one attempt per tick (the next tick
 * checks again). The crontab runs each tick once across worker containers. Its task reads
 * STRIPE_SECRET_KEY, to know whether a reconcile can run (reconcileRuns).
 */
export const databaseIdentityService: MaintenanceService<'sweepCron' | 'stripeSecretKey'> = {
  identifier: IDENTITY_TASK,
  settings: ['sweepCron', 'stripeSecretKey'],
  crontab: ({ sweepCron }) => `${sweepCron} ${IDENTITY_TASK} ?max=1`,
};

/**
 * Checks now, as the worker starts, and again whenever graphile-worker's LISTEN connection comes
 * back after an error (a failover ends every connection): a failover or restore while no worker
 * ran is noticed at start-up, one while running at the reconnect, else at the next SWEEP_CRON
 * tick. Not fatal: the next tick checks again.
 */
export async function watchDatabaseIdentity(db: Kysely<Database>, events: WorkerEvents, options: Required<IdentityCheckOptions>): Promise<void> {
  const check = (when: string) =>
    checkDatabaseIdentity(db, options).catch((error: unknown) =>
      options.logger.error({ err: error }, `checking the database's identity ${when} failed; the next SWEEP_CRON tick checks again`),
    );
  await check('at start-up');
  let listenLost = false;
  events.on('pool:listen:error', () => (listenLost = true));
  events.on('pool:listen:success', () => {
    if (!listenLost) return;
    listenLost = false;
    void check('after LISTEN reconnected');
  });
}

/**
 * Reads the database's identity, records it if it differs from the recorded one, and then queues
 * a reconcile and a sweep in the same transaction (the change is recorded exactly when the jobs
 * are queued).
 *
 * The first check on a database records its identity and reconciles only if the database already
 * has events: an empty one cannot have lost any, while one with events and no recorded identity
 * is either this release's first start on an existing database or a failover that lost the row
 * itself (written moments before). Reconciling is idempotent and bounded, so in doubt it runs.
 */
export async function checkDatabaseIdentity(db: Kysely<Database>, options: IdentityCheckOptions): Promise<IdentityCheck> {
  const current = await readIdentity(db, options.logger);
  const check = await db.transaction().execute(async (tx): Promise<IdentityCheck> => {
    // The compare is the upsert's WHERE: of two workers checking at once, the second waits for the
    // first's row and compares with what it wrote, so one change is seen once.
    const { rows } = await sql<{
      changed: boolean;
      system_identifier: string | null;
      timeline_id: number | null;
      database_oid: number | null;
      has_events: boolean;
    }>`
      with previous as (select system_identifier, timeline_id, database_oid from database_identity),
      recorded as (
        insert into database_identity (singleton, system_identifier, timeline_id, database_oid)
        values (true, ${current.systemIdentifier}::bigint, ${current.timelineId}::int, ${current.databaseOid}::oid)
        on conflict (singleton) do update set
          system_identifier = excluded.system_identifier, timeline_id = excluded.timeline_id,
          database_oid = excluded.database_oid, recorded_at = now()
        where (database_identity.system_identifier, database_identity.timeline_id, database_identity.database_oid)
          is distinct from (excluded.system_identifier, excluded.timeline_id, excluded.database_oid)
        returning 1
      )
      select exists (select from recorded) as changed, p.system_identifier::text, p.timeline_id, p.database_oid,
             exists (select from stripe_events) as has_events
      from (select) as one left join previous p on true`.execute(tx);
    const row = rows[0]!;
    const previous = row.database_oid === null ? null : { systemIdentifier: row.system_identifier, timelineId: row.timeline_id, databaseOid: row.database_oid };
    const reconcileQueued = row.changed && options.reconcile && (previous !== null || row.has_events);
    if (reconcileQueued) await queueReconcile(tx);
    const sweepQueued = row.changed && previous !== null;
    if (sweepQueued) await queueSweepSoon(tx, { afterSeconds: SWEEP_AFTER_CHANGE_SECONDS, reason: 'database_identity' });
    return { previous, current, changed: row.changed, reconcileQueued, sweepQueued };
  });
  if (check.changed && (check.previous !== null || check.reconcileQueued)) {
    const what =
      check.previous === null
        ? 'no identity was recorded for a database with events (the first start of this release, or the row lost with a failover)'
        : "the database's identity changed (a failover or a restore?)";
    const then = check.reconcileQueued
      ? "started a reconcile of Stripe's events, to claim those acknowledged to the old database"
      : 'no reconcile without STRIPE_SECRET_KEY';
    options.logger?.warn({ previous: check.previous, current, reconcileQueued: check.reconcileQueued, sweepQueued: check.sweepQueued }, `${what}: ${then}`);
  }
  return check;
}

/**
 * Queues one `reconcile_events` job to run now, with RECONCILE_JOB_KEY: while one such job waits,
 * another replaces it rather than adding a second. In the caller's transaction. It reads from the
 * newest, not on from where a run stopped: what a failover lost is the newest.
 */
async function queueReconcile(tx: Transaction<Database>): Promise<void> {
  await forgetCursors(tx);
  await addJob(tx, RECONCILE_TASK, {}, { key: RECONCILE_JOB_KEY, maxAttempts: RECONCILE_JOB_ATTEMPTS });
}

/**
 * The current timeline from the WAL file being written: pg_control_checkpoint().timeline_id
 * still shows the old one after a promotion until the next checkpoint. pg_current_wal_lsn() works
 * on a primary only, which is where the service runs. PostgreSQL grants these functions to every
 * role (also on 15); a provider may revoke them, and then the identity is the database's oid
 * alone (a warning says so): a restore into a new database is still noticed, a failover only by
 * RECONCILE_CRON's schedule.
 */
async function readIdentity(db: Kysely<Database>, logger: Logger | undefined): Promise<DatabaseIdentity> {
  const oid = sql<number>`(select oid from pg_database where datname = current_database())`;
  try {
    const { rows } = await sql<DatabaseIdentity>`
      select (select system_identifier::text from pg_control_system()) as "systemIdentifier",
             ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int as "timelineId",
             ${oid} as "databaseOid"`.execute(db);
    return rows[0]!;
  } catch (error) {
    if (!isInsufficientPrivilege(error)) throw new Error("reading the database's identity", { cause: error });
    if (!warnedNoPrivilege)
      logger?.warn(
        { error: (error as Error).message },
        "the database's role may not read its system identifier or timeline: a failover is noticed only by RECONCILE_CRON's schedule",
      );
    warnedNoPrivilege = true;
    const { rows } = await sql<{ databaseOid: number }>`select ${oid} as "databaseOid"`.execute(db);
    return { systemIdentifier: null, timelineId: null, databaseOid: rows[0]!.databaseOid };
  }
}

/** Once per process: the role's privileges do not change from one tick to the next. */
let warnedNoPrivilege = false;
