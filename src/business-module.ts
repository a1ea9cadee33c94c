// What a business (credits packages, subscriptions, ...) plugs into the inbox through. The core —
// intake, claim, queue, fulfilment loop, sweep, prune, replay, reconcile, status, admin, metrics —
// imports no module (test/architecture/import-direction.test.ts); it runs what the modules listed
// in src/modules/index.ts declare here. docs/handlers.md is the guide to writing one.
import type { Router } from 'express';
import type { Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type { Config } from './config.js';
import type { Database } from './db/schema.js';
import type { EventLookups } from './events/read-model.js';
import type { Handlers } from './fulfilment/handler.js';
import type { Logger } from './logger.js';
import type { StripeCalls } from './stripe/outbound.js';

/** What a module's routes are given. */
export interface RouteContext {
  readonly config: Config;
  /** The API pool: requests never wait behind webhook intake or the worker (src/db/pools.ts). */
  readonly db: Kysely<Database>;
  /** Every outbound call to Stripe goes through here: bounded, timed, counted. */
  readonly stripeCalls: StripeCalls;
  /** How long an inbound Idempotency-Key is leased to the request using it (src/http/idempotent-request.ts). */
  readonly idempotencyLeaseMs: number;
  readonly logger: Logger;
}

/** What a module's graphile-worker tasks are given. */
export interface TaskContext {
  readonly config: Config;
  /** The worker pool. */
  readonly db: Kysely<Database>;
  readonly stripeCalls: StripeCalls;
  readonly logger: Logger;
}

export interface BusinessModule extends EventLookups {
  /** Short and unique; names the module in logs and docs. */
  readonly name: string;
  /**
   * Its migrations folder (NNNN_name.sql files), applied with the core's sql/ in one sequence of
   * version numbers: a module's new migration takes the next free number of the whole project.
   */
  readonly migrations?: URL;
  /** The event types it acts on; built once at start-up from the service's configuration. */
  handlers(config: Config): Handlers;
  /**
   * Its own graphile-worker tasks, by identifier (prefixed with the module's name): work that must
   * not run inside a handler's transaction, such as a call to Stripe. A handler queues a job with
   * addModuleJob (src/events/enqueue.ts) in its transaction.
   */
  tasks?(context: TaskContext): Readonly<Record<string, Task>>;
  /** Mounted under /api, behind API_TOKEN, with JSON bodies parsed. Paths are relative to /api. */
  apiRoutes?(context: RouteContext): Router;
  /** Mounted under /admin/api, behind ADMIN_TOKEN (bearer or dashboard session). Paths are relative to /admin/api. */
  adminRoutes?(context: RouteContext): Router;
}
