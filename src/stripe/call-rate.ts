// A pace for outbound Stripe calls that do not answer a person: the worker's fetches for thin
// events. Stripe limits each account's API requests per second (docs.stripe.com/rate-limits), and
// a backlog of thin notifications must not spend that budget which checkouts and refunds share.
import { setTimeout as sleep } from 'node:timers/promises';

export class CallRate {
  readonly #intervalMs: number;
  /** When (performance.now()) the next call may start, were the bucket empty. */
  #next = 0;

  constructor(readonly perSecond: number) {
    if (!(perSecond > 0)) throw new RangeError('a call rate must be positive');
    this.#intervalMs = 1_000 / perSecond;
  }

  /**
   * Resolves when one more call may start: up to `perSecond` at once after a quiet second (a
   * token bucket of one second's calls), then one every 1/perSecond s, in the order asked.
   */
  async take(): Promise<void> {
    const now = performance.now();
    this.#next = Math.max(this.#next, now - 1_000);
    const at = this.#next;
    this.#next += this.#intervalMs;
    if (at > now) await sleep(at - now);
  }
}
