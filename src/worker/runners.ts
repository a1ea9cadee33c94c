// The service's graphile-worker runners, each with its job-loop watchdog, started one by one and
// stopped together. Signal handling is ours (src/main.ts): graphile-worker would otherwise install
// its own SIGTERM handlers and race our graceful shutdown.
import { run, type Runner, type RunnerOptions } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from '../logger.js';
import { graphileLogger } from '../queue/graphile-logger.js';
import { JobLoopWatchdog, type JobLoopStatus } from '../queue/job-loop-watchdog.js';

export type RunnerName = 'fulfilment' | 'modules' | 'notifications';

export interface RunnersOptions {
  /** For tests of a stall: the job loop's stall threshold (job-loop-watchdog.ts). */
  stallAfterMs?: number;
  /** For tests that must see new jobs arrive by LISTEN/NOTIFY alone: poll this rarely. */
  pollIntervalMs?: number;
}

export class Runners {
  readonly #runners: Runner[] = [];
  readonly #watchdogs: Partial<Record<RunnerName, JobLoopWatchdog>> = {};

  constructor(
    /** The worker pool: graphile-worker's own queries and our fulfilment share it. */
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
    private readonly options: RunnersOptions,
  ) {}

  /** Starts one runner and returns once its first fetch of jobs came back. */
  async start(name: RunnerName, runnerOptions: RunnerOptions): Promise<JobLoopWatchdog> {
    const watchdog = new JobLoopWatchdog(name, this.logger, this.options);
    this.#watchdogs[name] = watchdog;
    const firstFetch = watchdog.firstFetch();
    firstFetch.catch(() => {}); // awaited below, once run() has returned
    const runner = await run({
      pgPool: this.pool,
      noHandleSignals: true,
      logger: graphileLogger(this.logger),
      // New jobs arrive by LISTEN/NOTIFY at once; polling only finds retries whose backoff ended
      // (and new jobs while LISTEN reconnects).
      pollInterval: this.options.pollIntervalMs ?? 2_000,
      events: watchdog.events,
      ...runnerOptions,
    });
    this.#runners.push(runner);
    void runner.promise.finally(() => watchdog.stop()).catch(() => {});
    await firstFetch;
    return watchdog;
  }

  /** Each runner's promise: settles when it stops, rejects with its failure. */
  promises(): Array<Promise<void>> {
    return this.#runners.map((runner) => runner.promise);
  }

  /** Stops every runner; a runner that already failed rejects with its failure, which its promise reports. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.#runners.map((runner) => runner.stop()));
  }

  /** Fails the jobs still running back to the queue and stops. */
  async kill(reason: string): Promise<void> {
    await Promise.allSettled(this.#runners.map((runner) => runner.kill(reason)));
  }

  /** After a failed start: stops what did start, and every watchdog's timer. */
  async abandon(): Promise<void> {
    await this.stop();
    for (const watchdog of Object.values(this.#watchdogs)) watchdog.stop();
  }

  status(): Partial<Record<RunnerName, JobLoopStatus>> {
    return Object.fromEntries(Object.entries(this.#watchdogs).map(([name, watchdog]) => [name, watchdog.status()]));
  }
}
