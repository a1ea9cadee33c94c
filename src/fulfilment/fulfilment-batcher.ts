// Group commit for fulfilment (src/db/group-commit.ts), the worker's twin of the webhook's
// claim-batcher.ts. A job already carries the events claimed together (src/queue/job-queue.ts);
// jobs that run at once — graphile-worker fetches a batch of them for its free slots — also share
// one transaction: one lock statement, each handler's set-based statement, one finish statement,
// one commit for all of their events. Under load the round trips are paid once for several jobs
// instead of once for each, and a round trip costs more CPU than the rows it writes
// (docs/speed.md). A job that runs alone, at low load, goes
// at once, unless it gives way to the webhook's claims (giveWay; ROLE=all, src/service.ts).
//
// A batch never changes an outcome. Side-effects and status flips still commit together
// (docs/design.md, invariant 6), and fulfilEvents falls back to one event per transaction when a
// batch fails, so a failure is counted against its own event only. A job on a retry runs alone, so
// an event that keeps failing costs its own fallback, not its neighbours'. A job waiting here holds
// no row lock yet: the sweep leaves it alone because graphile-worker fetched it moments ago
// (docs/design.md, invariant 7; src/queue/job-queue.ts waitingJobs), and the wait is short next
// to STALE_AFTER_SECONDS.
import { SpanKind } from '@opentelemetry/api';
import type { Kysely } from 'kysely';
import { GroupCommit } from '../db/group-commit.js';
import type { Database } from '../db/schema.js';
import { PROCESS_EVENT_TASK } from '../queue/job-queue.js';
import { inSpan, tracingOn } from '../tracing/trace-context.js';
import { fulfilEvents, type FulfilOptions, type FulfilResult } from './fulfil-event.js';

export interface FulfilmentBatcherOptions extends FulfilOptions {
  /** Most jobs in one transaction: the worker's concurrency, the jobs it can run at once. */
  maxJobs: number;
  /** Awaited before each shared transaction takes its jobs: fulfilment gives way to the webhook's claims where both run (src/db/group-commit.ts). */
  giveWay?: () => Promise<void>;
}

/**
 * Fulfilment transactions open at once. Two: one commits while the next gathers and locks, so
 * Postgres's commit flush is not on the critical path, and the rows locked stay few.
 */
const TRANSACTIONS_IN_FLIGHT = 2;

export class FulfilmentBatcher {
  readonly #group: GroupCommit<readonly string[], FulfilResult[]>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: FulfilmentBatcherOptions,
  ) {
    this.#group = new GroupCommit(async (jobs) => split(jobs, await this.#fulfilEvents(jobs.flat(), { jobs: jobs.length, retry: false })), {
      maxBatch: options.maxJobs,
      maxInFlight: TRANSACTIONS_IN_FLIGHT,
      // Jobs that start while it waits join the batch.
      ...(options.giveWay && { beforeBatch: options.giveWay }),
      // fulfilEvents already fulfils each event alone when a shared transaction fails; what still
      // rejects (the database away, or a failure of that one-by-one pass) fails every job of the
      // batch, and graphile-worker retries each, alone.
      retryAlone: () => false,
    });
  }

  /** Fulfils one job's events; resolves with one result per id after their transaction committed. */
  fulfil(eventIds: readonly string[], { retry }: { retry: boolean }): Promise<FulfilResult[]> {
    return retry ? this.#fulfilEvents(eventIds, { jobs: 1, retry }) : this.#group.submit(eventIds);
  }

  /**
   * With tracing on, inside the batch's CONSUMER span; fulfil-event.ts links it to each event's
   * stored context once it has locked the rows, so every run of an event (a retry, a reclaim, a
   * replay) links back to the webhook that brought it.
   */
  #fulfilEvents(eventIds: readonly string[], { jobs, retry }: { jobs: number; retry: boolean }): Promise<FulfilResult[]> {
    if (!tracingOn()) return fulfilEvents(this.db, eventIds, this.options);
    const attributes = {
      'messaging.system': 'graphile_worker',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': PROCESS_EVENT_TASK,
      'messaging.batch.message_count': jobs,
      'stripe_inbox.batch.size': eventIds.length,
      'stripe_inbox.retry': retry,
    };
    return inSpan(`process ${PROCESS_EVENT_TASK}`, { kind: SpanKind.CONSUMER, attributes }, () => fulfilEvents(this.db, eventIds, this.options));
  }

  /** The share of the recent past with a fulfilment transaction open (src/db/group-commit.ts). */
  busyShare(): number {
    return this.#group.busyShare();
  }

  /** Transactions and jobs committed together so far. */
  get stats(): { transactions: number; jobs: number } {
    const { transactions, items } = this.#group.stats;
    return { transactions, jobs: items };
  }
}

/** The results of a flattened batch, back into one list per job. */
function split(jobs: ReadonlyArray<readonly string[]>, results: FulfilResult[]): FulfilResult[][] {
  let start = 0;
  return jobs.map((job) => results.slice(start, (start += job.length)));
}
