// Reconcile: pull events we never received from Stripe's Events API (it keeps 30 days), and the
// notifications of a thin destination from its v2 events list, and claim
// them through the same path as the webhook. For an endpoint that was down longer than Stripe's
// retry window, or disabled, or deliveries Stripe gave up on, and for events that got their 2xx
// from a database that is gone since (an asynchronous failover, a restore from backup): Stripe
// never resends those. Idempotent: an event we already have is skipped by the claim itself (its
// id is the primary key), so running it twice changes nothing.
//
// Everything of it is here: its settings and schedule, the bounded run and what it records, and
// where a run cut short stopped (reconcile-cursors.ts); its task entry is tasks/reconcile_events.ts.
// One function, three callers: the cron task, the same task queued when the database's identity
// changed (database-identity.ts), and `npm run reconcile`.
import type { Kysely } from 'kysely';
import type Stripe from 'stripe';
import { recordMaintenanceRun } from '../db/maintenance-runs.js';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import { claimEvents, type IncomingEvent } from '../events/event-store.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { CallRate } from '../stripe/call-rate.js';
import { toIncomingEvent, toIncomingNotification, type ThinNotification } from '../stripe/webhook-event.js';
import { apiPathOf } from '../stripe/thin-events.js';
import type { MaintenanceService } from './maintenance-service.js';
import { readCursors, saveCursors, type ReconcileCursors, type ReconcileList } from './reconcile-cursors.js';

/** Stripe's Events API lists events of the last 30 days only. */
export const STRIPE_EVENTS_RETENTION_DAYS = 30;

/** graphile-worker's identifier for the reconcile task: stored in every queued job, so it stays. */
export const RECONCILE_TASK = 'reconcile_events';

export interface ReconcileOptions {
  since: Date;
  /** Only events Stripe itself failed to deliver (delivery_success=false). */
  undeliveredOnly?: boolean;
  dryRun?: boolean;
  maxAttempts: number;
  /** Both, unless told: a thin destination's events are only in the v2 list. */
  lists?: ReconcileLists;
  /** Most Stripe list calls (pages of 100 events) in this run; unbounded unless told. */
  maxCalls?: number;
  /** Paces the list calls; unpaced unless given. */
  callRate?: CallRate;
  /**
   * Reads each list on from where the last resuming run ran out of calls, and leaves where this
   * one does (reconcile_cursors): the scheduled runs, so that a window holding more than maxCalls
   * pages is read whole over several runs. The script reads from the newest and moves no cursor.
   */
  resume?: boolean;
  /** Logs a line only when the run claimed something or was cut short. */
  logger?: Logger;
  metrics?: Pick<Metrics, 'reconciledEvents'>;
}

export interface ReconcileResult {
  listed: number;
  missing: number;
  claimed: number;
  /** Stripe list calls made (each a page of up to 100 events). */
  calls: number;
  /** maxCalls ran out before the lists did: the oldest part of the window was not read (by a resuming run: not yet). */
  truncated: boolean;
  /** It went on with a pass over the window that an earlier run started, rather than from the newest. */
  resumed: boolean;
  dry_run: boolean;
  event_ids: string[];
}

const PAGE_SIZE = 100;

/** Which of Stripe's lists to read: the Events API (snapshot events), the v2 events list (thin), or both. */
export type ReconcileLists = 'snapshot' | 'thin' | 'both';

/** A page of the v2 events list, as the SDK's pager reads it. */
interface V2Page {
  data: unknown[];
  next_page_url: string | null;
}

/** One list call's events, and where the next page starts (none after the last): a cursor. */
interface Page {
  events: IncomingEvent[];
  next: string | undefined;
}

/**
 * Reconcile as the worker runs it: task `reconcile_events` (tasks/reconcile_events.ts) every
 * RECONCILE_CRON tick over the last RECONCILE_WINDOW_HOURS, bounded by RECONCILE_MAX_CALLS and
 * RECONCILE_CALLS_PER_SECOND. One attempt per tick: a failed run is the next tick's work.
 *
 * Not scheduled without STRIPE_SECRET_KEY (`reconcileRuns`): that is development, whose offline
 * stand-in forgets its events when it stops, so there is nothing to reconcile against. Then the
 * crontab line is empty (graphile-worker skips it), the worker says so once as it registers the
 * task, and a changed database identity queues no run either (database-identity.ts).
 */
export const reconcileRuns = ({ stripeSecretKey }: Pick<Config, 'stripeSecretKey'>) => stripeSecretKey !== undefined;

export const reconcileService: MaintenanceService<
  'stripeSecretKey' | 'reconcileCron' | 'reconcileWindowMs' | 'reconcileMaxCalls' | 'reconcileCallsPerSecond' | 'maxAttempts'
> = {
  identifier: RECONCILE_TASK,
  settings: ['stripeSecretKey', 'reconcileCron', 'reconcileWindowMs', 'reconcileMaxCalls', 'reconcileCallsPerSecond', 'maxAttempts'],
  crontab: (settings) => (reconcileRuns(settings) && settings.reconcileCron !== 'off' ? `${settings.reconcileCron} ${RECONCILE_TASK} ?max=1` : ''),
};

/**
 * Lists Stripe's events created since `options.since`, newest first, page by page, claiming each
 * page's missing ones before the next call; stops after `maxCalls` calls (`truncated`). A
 * resuming run starts each list where the last one stopped, if it did. Unless a dry run, records
 * the run (maintenance_runs, metrics) and logs a line if it claimed something (those events had
 * been lost), was cut short, or finished a window that earlier runs had started.
 */
export async function reconcileEvents(db: Kysely<Database>, stripe: Stripe, options: ReconcileOptions): Promise<ReconcileResult> {
  const result: ReconcileResult = {
    listed: 0,
    missing: 0,
    claimed: 0,
    calls: 0,
    truncated: false,
    resumed: false,
    dry_run: options.dryRun ?? false,
    event_ids: [],
  };
  const resume = (options.resume ?? false) && !result.dry_run;
  const cursors: ReconcileCursors = resume ? await readCursors(db) : new Map();
  // Where this run leaves each list, for the next one while the pass is not over.
  const leaves = new Map(cursors);
  result.resumed = cursors.size > 0;
  const lists = options.lists ?? 'both';
  const maxCalls = options.maxCalls ?? Infinity;
  const claimMissing = async (page: IncomingEvent[]) => {
    if (page.length === 0) return;
    const known = await db
      .selectFrom('stripe_events')
      .select('event_id')
      .where(
        'event_id',
        'in',
        page.map((e) => e.eventId),
      )
      .execute();
    const have = new Set(known.map((r) => r.event_id));
    const missing = page.filter((e) => !have.has(e.eventId));
    result.missing += missing.length;
    if (!result.dry_run && missing.length > 0) {
      const outcomes = await claimEvents(db, missing, { maxAttempts: options.maxAttempts });
      missing.forEach((e, i) => outcomes[i] === 'claimed' && (result.claimed++, result.event_ids.push(e.eventId)));
    } else {
      result.event_ids.push(...missing.map((e) => e.eventId));
    }
  };
  // Pages from the list's cursor, else from the newest, to the start of the window; a list this
  // pass already read to there is skipped. Out of calls first, the run leaves where the next page
  // starts (or, before the list's first page, the cursor it found).
  const claimAll = async (list: ReconcileList, read: (from: string | undefined) => Promise<Page>) => {
    const found = cursors.get(list);
    if (found === null) return;
    let from = found;
    for (let first = true; ; first = false) {
      if (result.calls >= maxCalls) {
        result.truncated = true;
        if (from !== undefined) leaves.set(list, from);
        return;
      }
      await options.callRate?.take();
      result.calls++;
      const page = await read(from).catch(async (error: unknown) => {
        // An event that aged out of Stripe's 30 days, or a page token that expired: the cursor is
        // no use now, and reading from the newest again loses nothing (claims are idempotent).
        if (from === undefined || !first || !isInvalidRequest(error)) throw error;
        options.logger?.warn(
          { list, resumeFrom: from, error: (error as Error).message },
          `Stripe refused the ${list} list's cursor where the last reconcile stopped: reading it from the newest`,
        );
        result.calls++;
        return read(undefined);
      });
      result.listed += page.events.length;
      await claimMissing(page.events);
      from = page.next;
      if (from === undefined) {
        leaves.set(list, null);
        return;
      }
    }
  };
  // Not the bytes of a webhook delivery (there was none), but the same object.
  if (lists !== 'thin') {
    const snapshotPage = async (startingAfter: string | undefined): Promise<Page> => {
      const page = await stripe.events.list({
        created: { gte: Math.floor(options.since.getTime() / 1000) },
        limit: PAGE_SIZE,
        ...(options.undeliveredOnly && { delivery_success: false }),
        ...(startingAfter !== undefined && { starting_after: startingAfter }),
      });
      const last = page.data.at(-1);
      return {
        events: page.data.map((event) => toIncomingEvent(event, Buffer.from(JSON.stringify(event)))),
        next: page.has_more && last ? last.id : undefined,
      };
    };
    await claimAll('snapshot', snapshotPage);
  }
  if (lists !== 'snapshot') {
    // A thin destination's notifications: the v2 list, paged by its own next_page_url, which
    // carries the page token and the filters (the SDK's own pager follows it the same way). Its
    // `created` filter takes an RFC 3339 time, as every v2 timestamp (the SDK types it as a number).
    const created = { gte: options.since.toISOString() } as unknown as Stripe.RangeQueryParam;
    const thinPage = async (url: string | undefined): Promise<Page> => {
      const page: V2Page =
        url === undefined ? await stripe.v2.core.events.list({ created, limit: PAGE_SIZE }) : ((await stripe.rawRequest('GET', nextPagePath(url))) as V2Page);
      return {
        events: page.data.map((notification) => toIncomingNotification(notification as ThinNotification, Buffer.from(JSON.stringify(notification)))),
        next: page.next_page_url ?? undefined,
      };
    };
    await claimAll('thin', thinPage);
  }
  // The pass is over once every list was read to the start of the window: the next run starts anew.
  if (resume && !(await saveCursors(db, cursors, result.truncated ? leaves : new Map()))) {
    options.logger?.info(
      { listed: result.listed, calls: result.calls },
      'another reconcile moved the cursors while this one ran: where it stopped is not kept, theirs is',
    );
  }
  if (!result.dry_run) await recordRun(db, result, options);
  return result;
}

async function recordRun(db: Kysely<Database>, result: ReconcileResult, options: ReconcileOptions): Promise<void> {
  const { listed, missing, claimed, calls, truncated, resumed } = result;
  await recordMaintenanceRun(db, 'reconcile', { listed, missing, claimed, calls, truncated, resumed });
  options.metrics?.reconciledEvents.inc(claimed);
  // Each claimed event had been acknowledged to Stripe, or never delivered, and was not here: lost.
  if (claimed > 0) options.logger?.warn({ listed, missing, claimed, calls, since: options.since }, 'reconcile claimed events Stripe has and we had lost');
  if (truncated) {
    const then = options.resume ? 'the next run reads on from there; to read it in one run, raise' : 'raise';
    options.logger?.warn(
      { listed, calls, resumed, since: options.since },
      `reconcile stopped after ${calls} Stripe list calls, before the start of its window: ${then} RECONCILE_MAX_CALLS (or lower RECONCILE_WINDOW_HOURS)`,
    );
  } else if (resumed) {
    options.logger?.info(
      { listed, calls, since: options.since },
      'reconcile read on to the start of its window: a pass over it, started by an earlier run, is complete',
    );
  }
}

/**
 * The next page's URL is fetched with our secret key, as a thin event's related_object.url is: it
 * must stay a path of Stripe's /v1/ or /v2/ API once resolved (apiPathOf), whoever wrote it (the
 * list's answer, or the cursor a run left in the database).
 */
function nextPagePath(url: string): string {
  const path = apiPathOf(url);
  if (path === undefined)
    throw new Error(
      `Stripe's v2 event list gave a next_page_url that is not a path of its /v1/ or /v2/ API once resolved: ${JSON.stringify(url.slice(0, 200))}; refused, nothing fetched`,
    );
  return path;
}

/** Stripe refused the request itself (4xx invalid_request_error): asking again will not help. */
function isInvalidRequest(error: unknown): boolean {
  return (error as { type?: unknown } | null)?.type === 'StripeInvalidRequestError';
}
