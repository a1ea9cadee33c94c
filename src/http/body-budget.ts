// The bytes of webhook bodies held before their signature is checked, bounded across all
// requests at once. One delivery may be up to 1 MiB, and its signature can be checked only once
// all of it has arrived, so without a shared bound N slow or idle senders hold N MiB. Past the
// bound a delivery gets 503 with Retry-After: Stripe retries, and real deliveries (a few KB
// each) fit by the thousand in the default 16 MiB.
export class BodyBudget {
  #held = 0;

  constructor(readonly limitBytes: number) {}

  get heldBytes(): number {
    return this.#held;
  }

  /** Takes `bytes` from the budget if they fit; false leaves it unchanged. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.limitBytes) return false;
    this.#held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#held -= bytes;
  }
}
