// What the core runs a business module as: the shape src/business-module.ts's defineModule makes,
// and what the core hands it. Types only, importing only what they name, so that the core's code
// that runs modules (src/http/, src/worker/, src/service.ts) imports this file and not the front
// door, which sits above the core it re-exports.
import type { Router } from 'express';
import type { Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type { AccountLookups } from './accounts/account-view.js';
import type { Config, SettingsTable } from './config.js';
import type { Database } from './db/schema.js';
import type { EventLookups } from './events/read-model.js';
import type { Handlers } from './fulfilment/handler.js';
import type { Logger } from './logger.js';
import type { Notifications } from './notifications/outbox.js';
import type { StripeCalls } from './stripe/outbound.js';

/** What the core hands a module's routes (src/http/app.ts); the module's code sees ModuleRouteContext. */
export interface RouteContext {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly stripeCalls: StripeCalls;
  readonly idempotencyLeaseMs: number;
  readonly logger: Logger;
  readonly notifications: Notifications;
}

/** What the core hands a module's tasks (src/run-worker.ts); the module's code sees ModuleContext. */
export interface TaskContext {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly stripeCalls: StripeCalls;
  readonly logger: Logger;
  readonly notifications: Notifications;
}

/** A module as the core runs it: made by defineModule, which gives each part its own settings only. */
export interface BusinessModule extends EventLookups, AccountLookups {
  readonly name: string;
  /** Read by loadConfig with the core's settings (src/config.ts), into config.moduleSettings[name]. */
  readonly settings?: SettingsTable;
  /** Its migrations folder, applied with the core's sql/ in one sequence of versions (src/db/migrate.ts). */
  readonly migrations?: URL;
  /** The tables it owns (docs/migrations.md). */
  readonly tables?: readonly string[];
  /** Built once at start-up; the module's own part is given its settings and the outbox (src/notifications/outbox.ts). */
  handlers(config: Config, notifications: Notifications): Handlers;
  tasks?(context: TaskContext): Readonly<Record<string, Task>>;
  apiRoutes?(context: RouteContext): Router;
  adminRoutes?(context: RouteContext): Router;
}
