// The module contract: every type a business module and the core agree on, in one file, as
// graphile-worker keeps its one face. A module declares a ModuleDefinition (its handlers, tasks,
// routes, settings, tables) through defineModule in src/business-module.ts, which turns it into
// the BusinessModule the core runs and hands each part its slice of the core (ModuleContext,
// ModuleRouteContext, HandlerContext). Types only, importing only what they name, so that the
// core's code that runs modules (src/http/, src/worker/, src/fulfilment/, src/service.ts) imports
// this file and not the front door, which sits above the core it re-exports. docs/handlers.md is
// the guide to writing a module against it.
import type { Router } from 'express';
import type { Task } from 'graphile-worker';
import type { Kysely, Transaction } from 'kysely';
import type { AccountLookups } from './accounts/account-view.js';
import type { Config, SettingsTable, SettingValues } from './config.js';
import type { Database, StripeEventRow } from './db/schema.js';
import type { Wake } from './events/event-waits.js';
import type { EventLookups } from './events/read-model.js';
import type { Logger } from './logger.js';
import type { Notifications } from './notifications/outbox.js';
import type { FinishOutcome } from './outcomes.js';
import type { StripeCalls } from './stripe/stripe-calls.js';

// Handlers: what a module gives the fulfilment loop for an event type. A handler runs inside the
// transaction that finishes the event's row, so whatever it writes commits together with the
// status it returns, or not at all (docs/design.md, invariants 2 and 6).

/**
 * Handles one event. `tx` is the fulfilment transaction, with the event's row locked; the outcome
 * is the status the row ends in: 'processed', 'ignored' (nothing for this module to do, with a
 * reason when an operator may wonder) or 'duplicate' of the event that already produced the effect. Throw a PermanentError when retrying
 * cannot help, a RetryLaterError when the event waits for another; any other error is transient.
 */
export type EventHandler = (tx: Transaction<Database>, event: StripeEventRow) => Promise<FinishOutcome>;

/**
 * Handles all events of its types in a job's batch at once (one statement for all, where one per
 * event would cost a round trip each). One result per event, in order: its outcome, or the Error
 * it failed with. Throwing fails them all.
 */
export type BatchHandler = (tx: Transaction<Database>, events: readonly StripeEventRow[]) => Promise<Array<FinishOutcome | Error>>;

export type Handler = EventHandler | { readonly batch: BatchHandler };

/** A module's handlers by event type. Types no module lists are stored and end 'ignored'. */
export type Handlers = Readonly<Record<string, Handler>>;

// What a module's code is given.

/** The core's services a module's code is given, with the module's own settings. */
export interface ModuleContext<S> {
  /** The module's own settings: its table's values, read once at start-up with the core's. */
  readonly settings: S;
  /** For routes the API pool, whose requests never wait behind webhook intake or the worker (src/db/pools.ts); for tasks the worker pool. */
  readonly db: Kysely<Database>;
  /** Every outbound call to Stripe goes through here: bounded, timed, counted. */
  readonly stripeCalls: StripeCalls;
  /** The mode of STRIPE_SECRET_KEY: what a module fetches from Stripe acts only if it is of it (modeMismatch). */
  readonly livemode: boolean;
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
  /**
   * Its pumps, by name (prefixed with the module's name): loops each worker process runs beside
   * the runners, for an outbox of the module's own that sends to Stripe (src/worker/module-pumps.ts).
   */
  readonly pumps?: (context: ModuleContext<SettingValues<T>>) => Readonly<Record<string, ModulePump>>;
  /** Its share of the daily retention (src/maintenance/prune.ts): deletes its own finished outbox rows older than the cutoff; how many. */
  readonly retention?: (db: Kysely<Database>, cutoff: RetentionCutoff) => Promise<number>;
  /** Its gauges on /metrics, built once with the API pool; the values of one scrape may share one query. */
  readonly gauges?: (db: Kysely<Database>) => readonly ModuleGauge[];
  /** Mounted under /api, behind API_TOKEN, with JSON bodies parsed. Paths are relative to /api. */
  readonly apiRoutes?: (context: ModuleRouteContext<SettingValues<T>>) => Router;
  /** Mounted under /admin/api, behind ADMIN_TOKEN (bearer or dashboard session). Paths are relative to /admin/api. */
  readonly adminRoutes?: (context: ModuleRouteContext<SettingValues<T>>) => Router;
}

/** What retention deletes before (the events' cutoff, EVENT_RETENTION_DAYS), and how many rows a statement takes. */
export interface RetentionCutoff {
  readonly before: Date;
  readonly batchSize: number;
}

/** A gauge a module adds to /metrics, read from Postgres on each scrape (src/metrics/metrics.ts). */
export interface ModuleGauge {
  /** stripe_inbox_<module>_…, in Prometheus' form. */
  readonly name: string;
  readonly help: string;
  value(): Promise<number>;
}

/**
 * A module's outbox pump: an outbox table is its own queue, and a pump claims its due rows (FOR
 * UPDATE SKIP LOCKED, so any number of processes pump at once), sends them outside any
 * transaction and records the answers. The worker calls pumpOnce again at once while it answers
 * 'more', and after idleMs when it answers 'idle'; a throw is logged and counts as idle.
 */
export interface ModulePump {
  readonly idleMs: number;
  pumpOnce(): Promise<'more' | 'idle'>;
}

// What the core runs a module as, and hands it; defineModule narrows each to the module's view.

/** What the core hands a module's routes (src/http/app.ts); the module's code sees ModuleRouteContext. */
export interface RouteContext {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly stripeCalls: StripeCalls;
  readonly idempotencyLeaseMs: number;
  readonly logger: Logger;
  readonly notifications: Notifications;
}

/** What the core hands a module's tasks (src/worker/module-jobs-runner.ts); the module's code sees ModuleContext. */
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
  pumps?(context: TaskContext): Readonly<Record<string, ModulePump>>;
  gauges?(db: Kysely<Database>): readonly ModuleGauge[];
  retention?(db: Kysely<Database>, cutoff: RetentionCutoff): Promise<number>;
  apiRoutes?(context: RouteContext): Router;
  adminRoutes?(context: RouteContext): Router;
}
