// Group commit: items submitted while a transaction is in flight wait for it and share the next
// one. Each submitter is answered only after the transaction holding its item has committed.
// An item submitted when nothing is in flight goes at once, alone (unless beforeBatch makes it
// wait): batching adds no wait at low load; batches only form under load, and their size follows
// the load.
//
// Used for webhook claims (src/events/claim-batcher.ts) and for the jobs a worker runs at once
// (src/fulfilment/fulfilment-batcher.ts): on these machines a round trip to Postgres costs more
// than the work in it, so sharing the commit and one set-based statement between items is what
// raises throughput (docs/speed.md).
//
// Giving way is this project's back-pressure: work that can wait gives way to the webhook's
// claims, because Stripe's deadline is on the answer, not on the credits. Fulfilment gives way to
// the claims where both share a process (ROLE=all), and the notification pump to fulfilment and
// those claims. A group measures how busy it is for them: whenIdle, what fulfilment awaits before
// a batch; busyShare, what the pump compares with its threshold.
export interface GroupCommitOptions {
  /** Most items in one transaction (bounds statement size and the locks held). */
  maxBatch: number;
  /** Transactions open at once. */
  maxInFlight: number;
  /**
   * After a batch failed: true to run each item of it alone (one bad item must not fail its
   * neighbours), false to fail them all with the batch's error (the database is away).
   */
  retryAlone(error: unknown): boolean;
  /**
   * A submitter not answered within this time gets `timeoutError()`; none if unset. Its item, if no
   * transaction has taken it yet, never will be: it is dropped, and what it holds is freed (a
   * transaction that hangs must not keep every later item alive behind it).
   */
  timeoutMs?: number;
  timeoutError?: () => Error;
  /**
   * Awaited by a free transaction slot before it takes its batch from the queue, so items that
   * arrive meanwhile join that batch; it must not reject. None by default: a batch goes at once.
   */
  beforeBatch?: () => Promise<void>;
}

/** busyShare() weighs the last moments most: a share from a second ago counts e⁻⁴ of one now. */
const BUSY_TIME_CONSTANT_MS = 250;

interface Pending<I, O> {
  /** Undefined once the submitter timed out before a transaction took the item. */
  item: I | undefined;
  /** Taken into a transaction: it commits with it, even after its submitter timed out. */
  taken: boolean;
  resolve: (outcome: O) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<I, O> {
  readonly #queue: Array<Pending<I, O>> = [];
  readonly #idleWaiters: Array<() => void> = [];
  #inFlight = 0;
  /** Slots waiting in beforeBatch: each will take up to maxBatch of the queue. */
  #gathering = 0;
  #transactions = 0;
  #items = 0;
  #busyShare = 0;
  #busyShareAt = performance.now();

  /** `commit` runs one transaction for the items and returns one outcome per item, in order. */
  constructor(
    private readonly commit: (items: I[]) => Promise<O[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Resolves after the transaction holding this item has committed. */
  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      const { timeoutMs, timeoutError } = this.options;
      const settle =
        <T>(fn: (value: T) => void) =>
        (value: T) => {
          clearTimeout(timer);
          fn(value);
        };
      const pending: Pending<I, O> = { item, taken: false, resolve: settle(resolve), reject: settle(reject) };
      // Emptied rather than spliced out: under a hang thousands time out, and a search of the
      // queue for each would cost its length.
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              if (!pending.taken) pending.item = undefined;
              reject(timeoutError?.() ?? new Error(`not committed within ${timeoutMs} ms`));
            }, timeoutMs);
      this.#queue.push(pending);
      this.#next();
    });
  }

  /** Resolves when nothing is queued or in flight, or after `maxWaitMs`, whichever comes first. */
  whenIdle(maxWaitMs: number): Promise<void> {
    if (this.#inFlight === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, maxWaitMs);
      const waiters = this.#idleWaiters;
      function done() {
        clearTimeout(timer);
        const at = waiters.indexOf(done);
        if (at >= 0) waiters.splice(at, 1);
        resolve();
      }
      waiters.push(done);
    });
  }

  /**
   * The share of the recent past with a transaction open, from 0 to 1 (an exponentially weighted
   * average, BUSY_TIME_CONSTANT_MS): near 1 while a backlog drains or a burst is taken, low at a
   * steady moderate rate, whose transactions are short and far apart.
   */
  busyShare(): number {
    this.#foldBusyShare();
    return this.#busyShare;
  }

  /** Transactions and items committed so far: items / transactions is the mean batch size. */
  get stats(): { transactions: number; items: number } {
    return { transactions: this.#transactions, items: this.#items };
  }

  #next(): void {
    while (this.#inFlight < this.options.maxInFlight && this.#queue.length > this.#gathering * this.options.maxBatch) {
      this.#foldBusyShare();
      this.#inFlight++;
      void this.#takeBatch().finally(() => {
        this.#foldBusyShare();
        this.#inFlight--;
        this.#next();
        if (this.#inFlight === 0) for (const idle of [...this.#idleWaiters]) idle();
      });
    }
  }

  /** Folds the time since the last fold, busy or not, into busyShare: call before #inFlight changes. */
  #foldBusyShare(): void {
    const now = performance.now();
    const busy = this.#inFlight > 0 ? 1 : 0;
    this.#busyShare = busy + (this.#busyShare - busy) * Math.exp(-(now - this.#busyShareAt) / BUSY_TIME_CONSTANT_MS);
    this.#busyShareAt = now;
  }

  async #takeBatch(): Promise<void> {
    if (this.options.beforeBatch) {
      this.#gathering++;
      await this.options.beforeBatch();
      this.#gathering--;
    }
    // Another slot that waited too may have taken everything.
    const batch = this.#queue.splice(0, this.options.maxBatch).filter((p): p is Pending<I, O> & { item: I } => p.item !== undefined);
    for (const p of batch) p.taken = true;
    if (batch.length > 0) await this.#run(batch);
  }

  async #run(batch: Array<Pending<I, O> & { item: I }>): Promise<void> {
    try {
      const outcomes = await this.#commit(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(outcomes[i]!));
    } catch (error) {
      if (batch.length === 1 || !this.options.retryAlone(error)) return batch.forEach((p) => p.reject(error));
      await Promise.all(batch.map((p) => this.#commit([p.item]).then(([outcome]) => p.resolve(outcome!), p.reject)));
    }
  }

  async #commit(items: I[]): Promise<O[]> {
    const outcomes = await this.commit(items);
    this.#transactions++;
    this.#items += items.length;
    return outcomes;
  }
}
