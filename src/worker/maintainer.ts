// Every maintenance service the worker runs, in one list, as River's maintainer starts its
// services: the sweep, the lease reclaim, retention, reconcile and the database identity watch.
// The list makes the crontab and the task list of the runner that runs them (the fulfilment
// runner: src/worker/fulfilment-runner.ts), each task getting the settings its service names, not
// the whole configuration; and the identity watch starts beside them, once that runner is up.
import type { Task, TaskList, WorkerEvents } from 'graphile-worker';
import { identityTask } from '../../tasks/check_database_identity.js';
import { pruneTask } from '../../tasks/prune_events.js';
import { reclaimTask } from '../../tasks/reclaim_notification_deliveries.js';
import { reconcileTask } from '../../tasks/reconcile_events.js';
import { sweepTask } from '../../tasks/sweep_stale_events.js';
import type { Config } from '../config.js';
import { watchDatabaseIdentity } from '../maintenance/database-identity.js';
import type { MaintenanceTask, MaintenanceTaskDeps } from '../maintenance/maintenance-service.js';
import { reconcileRuns } from '../maintenance/reconcile.js';

/** A service made ready to run: its settings picked out of the configuration, here and only here. */
interface Prepared {
  identifier: string;
  crontab(config: Config): string;
  task(deps: MaintenanceTaskDeps, config: Config): Task;
}

function prepared<K extends keyof Config>(service: MaintenanceTask<K>): Prepared {
  const sliceOf = (config: Config) => Object.fromEntries(service.settings.map((key) => [key, config[key]])) as Pick<Config, K>;
  return {
    identifier: service.identifier,
    crontab: (config) => service.crontab(sliceOf(config)),
    task: (deps, config) => service.task({ ...deps, config: sliceOf(config) }),
  };
}

const SERVICES: readonly Prepared[] = [prepared(sweepTask), prepared(pruneTask), prepared(reclaimTask), prepared(reconcileTask), prepared(identityTask)];

export interface Maintenance {
  /** The services' crontab lines, for graphile-worker's run(). */
  crontab: string;
  taskList: TaskList;
  /** Once the runner is up (`events` its run()'s): the identity watch's first check, and its watch of LISTEN. */
  start(events: WorkerEvents): Promise<void>;
}

export function maintainer(config: Config, deps: MaintenanceTaskDeps): Maintenance {
  return {
    crontab: SERVICES.map((service) => `${service.crontab(config)}\n`).join(''),
    taskList: Object.fromEntries(
      SERVICES.map((service) => [service.identifier, service.task({ ...deps, logger: deps.logger.child({ task: service.identifier }) }, config)]),
    ),
    start: (events) =>
      watchDatabaseIdentity(deps.db, events, { reconcile: reconcileRuns(config), logger: deps.logger.child({ task: identityTask.identifier }) }),
  };
}
