// The shape every maintenance service has, as River's maintainer knows its services: a task
// identifier, the settings it reads and its crontab line. The service's file holds those and its
// loop; its task entry (tasks/<identifier>.ts) adds the task, which checks the job's payload and
// calls the loop. The maintainer (src/worker/maintainer.ts) hands each the settings it names, nothing else.
import type { Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import type { Logger } from '../logger.js';
import type { BusinessModule } from '../module-contract.js';
import type { Metrics } from '../metrics/metrics.js';

export interface MaintenanceService<K extends keyof Config> {
  /** graphile-worker's task identifier: stored in every queued job and in its known crontab, so it stays. */
  readonly identifier: string;
  /** The settings its crontab line and its task read: the maintainer picks these out of the configuration. */
  readonly settings: readonly K[];
  /** Its line of the crontab; empty for none (graphile-worker skips it). */
  crontab(settings: Pick<Config, K>): string;
}

/** What the worker gives every maintenance task; each takes the part it uses. */
export interface MaintenanceTaskDeps {
  /** The worker pool. */
  db: Kysely<Database>;
  stripe: Stripe;
  logger: Logger;
  metrics: Metrics;
  /** The modules whose own retention runs with the core's (src/maintenance/prune.ts). */
  modules: readonly Pick<BusinessModule, 'name' | 'retention'>[];
}

/**
 * A service with its task, as its entry in tasks/ declares it. A property, not a method, and K
 * taken from the service alone, so that a task reading a setting its service does not name fails
 * to type-check in the maintainer's list.
 */
export interface MaintenanceTask<K extends keyof Config> extends MaintenanceService<K> {
  readonly task: (deps: MaintenanceTaskDeps & { config: Pick<Config, NoInfer<K>> }) => Task;
}
