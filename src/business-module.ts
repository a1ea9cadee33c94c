// The front door between the inbox (the core) and the business modules: defineModule, and what a
// module may use of the core. A module imports from the core through this file only, and from
// another module through that module's index.ts only (test/architecture/import-direction.test.ts);
// the core — intake, claim, queue, fulfilment loop, sweep, prune, replay, reconcile, status,
// admin, metrics — imports no module, and runs what the modules listed in src/modules/index.ts
// declare here. The module contract's types live in src/module-contract.ts, which the core imports
// instead of this door, since the door re-exports the core. docs/handlers.md is the guide to
// writing a module; its examples compile against this file (test/architecture/handler-docs.test.ts).
import type { Router } from 'express';
import type { Config, Setting, SettingsTable, SettingValues } from './config.js';
import { waker } from './events/event-waits.js';
import { ownHandlers } from './fulfilment/handler-owners.js';
import type { BusinessModule, ModuleDefinition, ModuleRouteContext, RouteContext, TaskContext } from './module-contract.js';

// The module contract.
export type * from './module-contract.js';

// What a module may use of the core. Handlers: outcomes and errors, and the marker of a type only recorded.
export { recordOnly } from './fulfilment/finish-at-intake.js';
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
export { addJob as addModuleJob } from './queue/job-queue.js';
// A module's retention deletes as the core's does: in batches, each its own short statement.
export { deleteInBatches } from './maintenance/batched-delete.js';
// What the dashboard shows of a module beside an event, and how its search reads payloads.
export { payloadHolds, type BusinessRecord } from './events/read-model.js';
// What the dashboard's accounts view shows of a module under an account.
export type { AccountGrant, AccountRecords, AccountRun } from './accounts/account-view.js';
export type { StripeCallFailure, StripeCalls } from './stripe/stripe-calls.js';
// For a module's outbox pump, which calls run() and must tell a call never sent from one that may have reached Stripe.
export { isStripeBusy } from './stripe/stripe-calls.js';
export { modeMismatch } from './stripe/own-mode.js';
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

export function defineModule<const T extends SettingsTable = Record<never, Setting>>(definition: ModuleDefinition<T>): BusinessModule {
  const { name, settings, handlers, tasks, pumps, apiRoutes, adminRoutes, ...declared } = definition;
  const own = (config: Config): SettingValues<T> => {
    const values = config.moduleSettings[name];
    if (values) return values as SettingValues<T>;
    if (!settings || Object.keys(settings).length === 0) return {} as SettingValues<T>;
    throw new Error(`the settings of module ${name} were not read: load the configuration with the modules (loadServiceConfig, src/modules/index.ts)`);
  };
  const moduleContext = (context: TaskContext) => ({
    settings: own(context.config),
    db: context.db,
    stripeCalls: context.stripeCalls,
    livemode: context.config.stripeLivemode,
    logger: context.logger,
    notifications: context.notifications,
  });
  const routes = (build: (context: ModuleRouteContext<SettingValues<T>>) => Router) => (context: RouteContext) =>
    build({
      settings: own(context.config),
      db: context.db,
      stripeCalls: context.stripeCalls,
      livemode: context.config.stripeLivemode,
      idempotencyLeaseMs: context.idempotencyLeaseMs,
      wake: waker({ maxAttempts: context.config.maxAttempts }),
      logger: context.logger,
      notifications: context.notifications,
    });
  return {
    ...declared,
    name,
    ...(settings && { settings }),
    handlers: (config, notifications) => ownHandlers(name, handlers?.(own(config), { notifications, wake: waker({ maxAttempts: config.maxAttempts }) }) ?? {}),
    ...(tasks && { tasks: (context: TaskContext) => tasks(moduleContext(context)) }),
    ...(pumps && { pumps: (context: TaskContext) => pumps(moduleContext(context)) }),
    ...(apiRoutes && { apiRoutes: routes(apiRoutes) }),
    ...(adminRoutes && { adminRoutes: routes(adminRoutes) }),
  };
}
