// Group commit for webhook claims. Deliveries that arrive while a claim transaction is in flight
// wait for it and share the next one: one multi-row insert, one add_jobs, one commit. Each is
// answered only after the commit that holds it, so a 2xx still means "stored, with its job"
// (DESIGN invariant 1).
//
// Why: add_jobs ends in pg_notify, and Postgres serialises notifying commits database-wide (a
// global lock held through the commit's flush). One claim per transaction therefore caps ingest
// at about a thousand requests a second on two cores however many connections there are;
// sharing transactions pays that lock once per batch (figures in docs/benchmarks.md).
//
// A delivery arriving when nothing is in flight commits at once, alone: batching adds no wait at
// low load; batches only form under load, and their size follows the load.
//
// A claim not committed within claimTimeoutMs is answered with an error (the route's 503). That
// bounds a request when the database hangs instead of refusing (a network partition, a frozen
// host: nothing on the client side bounds a query on an open connection). If that transaction
// commits after all, Stripe's retry is simply answered as a duplicate.
import type { Kysely } from 'kysely';
import { isDatabaseUnavailable } from '../db/pg-errors.js';
import type { Database } from '../db/schema.js';
import { claimEvents, type ClaimOutcome, type EventQueueOptions, type IncomingEvent } from './event-store.js';

interface Pending {
  event: IncomingEvent;
  resolve: (outcome: ClaimOutcome) => void;
  reject: (error: unknown) => void;
}

export interface ClaimBatcherOptions extends EventQueueOptions {
  /** Most deliveries in one transaction (bounds statement size and the lock held). */
  maxBatch?: number;
  /** Claim transactions open at once; more waits gain nothing while commits serialise. */
  maxInFlight?: number;
  /** Longest a delivery waits for its commit; well under Stripe's own webhook timeout. */
  claimTimeoutMs?: number;
}

export class ClaimTimeoutError extends Error {
  constructor(ms: number) {
    super(`claim not committed within ${ms} ms: the database is too slow or unreachable`);
    this.name = 'ClaimTimeoutError';
  }
}

export class ClaimBatcher {
  readonly #queue: Pending[] = [];
  #inFlight = 0;
  #transactions = 0;
  #events = 0;
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  readonly #claimTimeoutMs: number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: ClaimBatcherOptions,
  ) {
    this.#maxBatch = options.maxBatch ?? 200;
    this.#maxInFlight = options.maxInFlight ?? 2;
    this.#claimTimeoutMs = options.claimTimeoutMs ?? 10_000;
  }

  /** Resolves after the transaction holding this event has committed. */
  claim(event: IncomingEvent): Promise<ClaimOutcome> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ClaimTimeoutError(this.#claimTimeoutMs)), this.#claimTimeoutMs);
      const settle = <T>(fn: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        fn(value);
      };
      this.#queue.push({ event, resolve: settle(resolve), reject: settle(reject) });
      this.#next();
    });
  }

  /** Transactions and events committed so far: events / transactions is the mean batch size. */
  get stats(): { transactions: number; events: number } {
    return { transactions: this.#transactions, events: this.#events };
  }

  #next(): void {
    while (this.#inFlight < this.#maxInFlight && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      this.#inFlight++;
      void this.#commit(batch).finally(() => {
        this.#inFlight--;
        this.#next();
      });
    }
  }

  async #commit(batch: Pending[]): Promise<void> {
    try {
      const outcomes = await this.#claim(batch.map((p) => p.event));
      batch.forEach((p, i) => p.resolve(outcomes[i]!));
    } catch (error) {
      // The database is away: every delivery gets its 503 now, none retried here.
      if (batch.length === 1 || isDatabaseUnavailable(error)) return batch.forEach((p) => p.reject(error));
      // Anything else may be one bad row: claim each alone so it fails without its neighbours.
      await Promise.all(batch.map((p) => this.#claim([p.event]).then(([outcome]) => p.resolve(outcome!), p.reject)));
    }
  }

  async #claim(events: IncomingEvent[]): Promise<ClaimOutcome[]> {
    const outcomes = await claimEvents(this.db, events, this.options);
    this.#transactions++;
    this.#events += events.length;
    return outcomes;
  }
}
