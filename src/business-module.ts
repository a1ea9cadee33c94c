// The front door between the inbox (the core) and the business modules. A module imports from the
// core through this file only, and from another module through that module's index.ts only
// (test/architecture/import-direction.test.ts); the core — intake, claim, queue, fulfilment loop,
// sweep, prune, replay, reconcile, status, admin, metrics — imports no module, and runs what the
// modules listed in src/modules/index.ts declare with defineModule, as the shape of
// src/module-interface.ts (which the core imports instead of this door, since the door re-exports
// the core). docs/handlers.md is the guide to writing one; its examples compile against this file
// (test/architecture/handler-docs.test.ts).
import type { Router } from 'express';
import type { Task } from 'graphile-worker';
import type { Kysely } from 'kysely';
import type { AccountLookups } from './accounts/account-view.js';
import type { Config, Setting, SettingsTable, SettingValues } from './config.js';
import type { Database } from './db/schema.js';
import { waker, type Wake } from './events/event-waits.js';
import type { EventLookups } from './events/read-model.js';
import type { Handlers } from './fulfilment/handler.js';
import type { Logger } from './logger.js';
import type { BusinessModule, RouteContext, TaskContext } from './module-interface.js';
import type { Notifications } from './notifications/outbox.js';
import type { StripeCalls } from './stripe/outbound.js';

// What the core runs a module as.
export type { BusinessModule, RouteContext, TaskContext } from './module-interface.js';

// What a module may use of the core. Handlers: the contract, outcomes and errors.
export { recordOnly, type BatchHandler, type EventHandler, type Handler, type Handlers } from './fulfilment/handler.js';
export { PermanentError, RetryLaterError, type FinishOutcome } from './outcomes.js';
export type { Database, Defaulted, StripeEventRow } from './db/schema.js';
export { isUniqueViolation } from './db/pg-errors.js';
// Waiting for what Stripe delivers later (a RetryLaterError's keys): lock them before the read that
// may decide to wait; wake them after writing what they stand for (src/events/event-waits.ts).
export { lockWaitKeys, WAIT_HOURS, type Wake } from './events/event-waits.js';
// Reading a Stripe object out of an event: objectOf throws, objectOrError returns the error (batch handlers).
export { objectOf, objectOrError, refundedCharge, stripeDispute, type RefundedCharge, type StripeDispute } from './stripe/stripe-objects.js';
export { quoted } from './quoted.js';
// A module's own job, queued in the caller's transaction.
export { addJob as addModuleJob } from './worker/job-queue.js';
// What the dashboard shows of a module beside an event, and how its search reads payloads.
export { payloadHolds, type BusinessRecord } from './events/read-model.js';
// What the dashboard's accounts view shows of a module under an account.
export type { AccountGrant, AccountRecords, AccountRun } from './accounts/account-view.js';
export type { StripeCallFailure, StripeCalls } from './stripe/outbound.js';
export type { Logger } from './logger.js';
// Outcome notifications to the app (docs/notifications.md), written in the outcome's transaction.
export type { NewNotification, Notifications } from './notifications/outbox.js';
// Settings a module declares in its folder, read at start-up with the core's.
export { defineSettings, httpUrl, type Setting, type SettingsTable, type SettingValues } from './config.js';
// Free text from outside, checked at the edge for what Postgres can store (a catalog item's name).
export { postgresText } from './db/postgres-text.js';
// HTTP, for a module's routes.ts only: input checks and inbound Idempotency-Keys.
export { badRequest, checkIdParam, idempotencyKeyHeader, optionalEmail, optionalIdempotencyKey } from './http/validation.js';
export { countKeys, createThenCall, runIdempotent, sendResult, stripeCallFailed, type HttpResult } from './http/idempotent-request.js';
// A module's sample events, built from Stripe's example objects (npm run send-event and the tests; never the service).
export { exampleObject, randomStripeId, sampleEvent, type SampleEvent } from './stripe/sample-events.js';

/** The core's services a module's code is given, with the module's own settings. */
export interface ModuleContext<S> {
  /** The module's own settings: its table's values, read once at start-up with the core's. */
  readonly settings: S;
  /** For routes the API pool, whose requests never wait behind webhook intake or the worker (src/db/pools.ts); for tasks the worker pool. */
  readonly db: Kysely<Database>;
  /** Every outbound call to Stripe goes through here: bounded, timed, counted. */
  readonly stripeCalls: StripeCalls;
  readonly logger: Logger;
  /** Tells the app of an outcome, in the transaction that makes it (docs/notifications.md); handlers get it in HandlerContext. */
  readonly notifications: Notifications;
}

/** What a module's handlers are built with, once at start-up. */
export interface HandlerContext {
  readonly notifications: Notifications;
  /** Wakes the events waiting for what the caller's transaction wrote (RetryLaterError's keys). */
  readonly wake: Wake;
}

/** What a module's routes are given. */
export interface ModuleRouteContext<S> extends ModuleContext<S> {
  /** How long an inbound Idempotency-Key is leased to the request using it (runIdempotent's leaseMs). */
  readonly idempotencyLeaseMs: number;
  /** Wakes the events waiting for what the caller's transaction wrote (a Checkout Session id stored). */
  readonly wake: Wake;
}

/** What a module declares; defineModule turns it into the BusinessModule the core runs. */
export interface ModuleDefinition<T extends SettingsTable> extends EventLookups, AccountLookups {
  /** Short and unique; names the module in logs, task names and docs. */
  readonly name: string;
  /**
   * Its settings (defineSettings): variable, check, default, example and doc of each. An entry
   * another module owns (exported by that module's index.ts) may be listed too: it is read once.
   */
  readonly settings?: T;
  /**
   * Its migrations folder (NNNN_name.sql files, by convention sql/<module>/), applied with the
   * core's sql/ in one sequence of version numbers: a new migration takes the next free number of
   * the whole project.
   */
  readonly migrations?: URL;
  /** The tables it owns: its code is their only writer, and their schema changes go in its migrations. */
  readonly tables?: readonly string[];
  /** The event types it acts on; built once at start-up. */
  readonly handlers?: (settings: SettingValues<T>, context: HandlerContext) => Handlers;
  /**
   * Its own graphile-worker tasks, by identifier (prefixed with the module's name): work that must
   * not run inside a handler's transaction, such as a call to Stripe. A handler queues a job with
   * addModuleJob in its transaction.
   */
  readonly tasks?: (context: ModuleContext<SettingValues<T>>) => Readonly<Record<string, Task>>;
  /** Mounted under /api, behind API_TOKEN, with JSON bodies parsed. Paths are relative to /api. */
  readonly apiRoutes?: (context: ModuleRouteContext<SettingValues<T>>) => Router;
  /** Mounted under /admin/api, behind ADMIN_TOKEN (bearer or dashboard session). Paths are relative to /admin/api. */
  readonly adminRoutes?: (context: ModuleRouteContext<SettingValues<T>>) => Router;
}

export function defineModule<const T extends SettingsTable = Record<never, Setting>>(definition: ModuleDefinition<T>): BusinessModule {
  const { name, settings, handlers, tasks, apiRoutes, adminRoutes, ...declared } = definition;
  const own = (config: Config): SettingValues<T> => {
    const values = config.moduleSettings[name];
    if (values) return values as SettingValues<T>;
    if (!settings || Object.keys(settings).length === 0) return {} as SettingValues<T>;
    throw new Error(`the settings of module ${name} were not read: load the configuration with the modules (loadServiceConfig, src/modules/index.ts)`);
  };
  const routes = (build: (context: ModuleRouteContext<SettingValues<T>>) => Router) => (context: RouteContext) =>
    build({
      settings: own(context.config),
      db: context.db,
      stripeCalls: context.stripeCalls,
      idempotencyLeaseMs: context.idempotencyLeaseMs,
      wake: waker({ maxAttempts: context.config.maxAttempts }),
      logger: context.logger,
      notifications: context.notifications,
    });
  return {
    ...declared,
    name,
    ...(settings && { settings }),
    handlers: (config, notifications) => handlers?.(own(config), { notifications, wake: waker({ maxAttempts: config.maxAttempts }) }) ?? {},
    ...(tasks && {
      tasks: (context: TaskContext) =>
        tasks({ settings: own(context.config), db: context.db, stripeCalls: context.stripeCalls, logger: context.logger, notifications: context.notifications }),
    }),
    ...(apiRoutes && { apiRoutes: routes(apiRoutes) }),
    ...(adminRoutes && { adminRoutes: routes(adminRoutes) }),
  };
}
