// Tells whether a graphile-worker runner's job loop is making progress, and keeps its LISTEN
// connection honest.
//
// A runner that cannot reach its database fulfils nothing while the process looks alive: its job
// fetch fails (or, on a half-open connection, hangs until the query deadline) and it quietly
// tries again at the next poll. Healthy, an idle runner completes a fetch every poll interval
// (2 s) and a busy one completes jobs, so "no fetch or job finished for STALL_AFTER_MS while no
// job runs" means the loop is stuck; jobs that run are bounded themselves (the query deadline,
// Stripe's per-attempt deadline), so "none finished for STUCK_JOBS_AFTER_MS" means they are stuck.
//
// The LISTEN connection sends nothing while it waits for notifications, so a half-open one is
// never noticed by a query's deadline: new jobs would then wait for the next poll instead of
// arriving at once. A small query on it every LISTEN_PROBE_EVERY_MS, under a short deadline,
// closes such a connection, and graphile-worker opens a new one and listens again.
import { EventEmitter } from 'node:events';
import type { WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { withDeadline } from '../db/query-deadline.js';
import { describeError } from '../outcomes.js';
import type { Logger } from '../logger.js';

// Above the query deadline (20 s) plus a poll interval: one fetch lost to a frozen connection
// is recovered from before the runner counts as stalled.
const STALL_AFTER_MS = 30_000;
const STUCK_JOBS_AFTER_MS = 5 * 60_000;
const LISTEN_PROBE_EVERY_MS = 10_000;
const LISTEN_PROBE_DEADLINE_MS = 5_000;

export interface JobLoopStatus {
  /** Seconds since the runner last fetched or finished a job. */
  progressAgeSeconds: number;
  /** Why the runner counts as stalled; undefined while it makes progress. */
  stalled: string | undefined;
}

/**
 * A job loop's status from how long ago it last made progress: stalled past STALL_AFTER_MS with
 * nothing running, or past STUCK_JOBS_AFTER_MS with jobs running that never finish. Also for a
 * loop of our own that is not graphile-worker's (src/notifications/delivery-pump.ts).
 */
export function judgeProgress(loop: {
  runner: string;
  ageMs: number;
  running: number;
  lastError: string | undefined;
  stallAfterMs?: number | undefined;
}): JobLoopStatus {
  const stallAfterMs = loop.stallAfterMs ?? STALL_AFTER_MS;
  const stalled = loop.running === 0 ? loop.ageMs > stallAfterMs : loop.ageMs > Math.max(stallAfterMs, STUCK_JOBS_AFTER_MS);
  return {
    progressAgeSeconds: loop.ageMs / 1000,
    stalled: stalled
      ? `the ${loop.runner} job loop has made no progress for ${Math.round(loop.ageMs / 1000)} s` + (loop.lastError ? ` (last error: ${loop.lastError})` : '')
      : undefined,
  };
}

export class JobLoopWatchdog {
  /** Passed to graphile-worker's run() as `events`, so that events of its start are seen too. */
  readonly events: WorkerEvents = new EventEmitter() as WorkerEvents;
  #lastProgress = performance.now();
  #running = 0;
  #lastError: string | undefined;
  #reported = false;
  #listenClient: pg.PoolClient | undefined;
  #started: { resolve(): void; reject(error: Error): void } | undefined;
  #probing = false;
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly runner: string,
    private readonly logger: Logger,
    private readonly options: { stallAfterMs?: number; listenProbeEveryMs?: number } = {},
  ) {
    const progress = () => this.#progress();
    this.events.on('localQueue:getJobs:complete', progress);
    this.events.on('worker:getJob:empty', progress);
    this.events.on('job:start', () => {
      this.#running++;
      progress();
    });
    this.events.on('job:complete', () => {
      this.#running--;
      progress();
    });
    this.events.on('worker:getJob:error', ({ error }) => {
      this.#lastError = describeError(error);
      this.#started?.reject(new Error(`the ${runner} runner's first job fetch failed`, { cause: error }));
    });
    this.events.on('pool:listen:error', ({ error }) => (this.#lastError = describeError(error)));
    this.events.on('pool:listen:success', ({ client }) => (this.#listenClient = client));
    this.events.on('pool:listen:release', ({ client }) => {
      if (this.#listenClient === client) this.#listenClient = undefined;
    });
    this.#timer = setInterval(() => this.#tick(), options.listenProbeEveryMs ?? LISTEN_PROBE_EVERY_MS).unref();
  }

  /**
   * Settles with the runner's first fetch: graphile-worker 0.18 keeps the promise of its first
   * task lookup, so a runner whose first fetch failed (the database went away at that moment)
   * fails every later fetch at once, for good. Such a runner must not be kept; a restart is the
   * cure (main.ts exits, the container restarts).
   */
  firstFetch(timeoutMs = this.options.stallAfterMs ?? STALL_AFTER_MS): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${this.runner} runner fetched no jobs within ${timeoutMs} ms of its start`)), timeoutMs);
      const settle = () => (clearTimeout(timer), (this.#started = undefined));
      this.#started = {
        resolve: () => (settle(), resolve()),
        reject: (error) => (settle(), reject(error)),
      };
    });
  }

  status(): JobLoopStatus {
    return judgeProgress({
      runner: this.runner,
      ageMs: performance.now() - this.#lastProgress,
      running: this.#running,
      lastError: this.#lastError,
      stallAfterMs: this.options.stallAfterMs,
    });
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #progress(): void {
    this.#lastProgress = performance.now();
    this.#started?.resolve();
    if (this.#reported) {
      this.#reported = false;
      this.logger.info({ runner: this.runner }, 'worker job loop making progress again');
    }
  }

  #tick(): void {
    const { stalled } = this.status();
    // Once per stall: a log line every tick would drown the one that matters.
    if (stalled && !this.#reported) {
      this.#reported = true;
      this.logger.error({ runner: this.runner, reason: stalled }, 'worker job loop stalled');
    }
    const client = this.#listenClient;
    if (client && !this.#probing) {
      this.#probing = true;
      // A failure closes the connection, which is the point: graphile-worker sees the error and
      // listens again on a new one (with its own log line).
      withDeadline(client, client.query('select 1'), LISTEN_PROBE_DEADLINE_MS)
        .catch(() => {})
        .finally(() => (this.#probing = false));
    }
  }
}
