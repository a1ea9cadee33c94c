// The bytes of webhook bodies held before their signature is checked, bounded across all
// requests at once and per client. One delivery may be up to 1 MiB, and its signature can be
// checked only once all of it has arrived, so without a bound N slow or idle senders hold N MiB.
// The whole bound keeps memory in check; the per-client share keeps one client (one address, as
// the rate limiter counts it) from taking all of it and keeping Stripe's deliveries out. Past
// either a delivery gets 503 with Retry-After: Stripe retries, and real deliveries (a few KB each)
// fit by the thousand in the default 16 MiB, or in the 2 MiB share of one Stripe address.
//
// A body of declared length takes all of it when its headers arrive, not as its bytes come in:
// otherwise any number of bodies could pass the check together and fill the budget afterwards.

/** One client may hold this part of the budget (an eighth: 2 MiB of the default 16 MiB)... */
const CLIENT_SHARE = 1 / 8;

export class BodyBudget {
  #held = 0;
  readonly #heldBy = new Map<string, number>();
  /** ...and never less than one body of the largest size, so that a small budget still takes one. */
  readonly clientLimitBytes: number;

  constructor(
    readonly limitBytes: number,
    { bodyLimitBytes }: { bodyLimitBytes: number },
  ) {
    this.clientLimitBytes = Math.min(limitBytes, Math.max(bodyLimitBytes, Math.floor(limitBytes * CLIENT_SHARE)));
  }

  /** Takes `bytes` for `client` if they fit both bounds; false leaves the budget unchanged. */
  take(client: string, bytes: number): boolean {
    const clientHeld = this.#heldBy.get(client) ?? 0;
    if (this.#held + bytes > this.limitBytes || clientHeld + bytes > this.clientLimitBytes) return false;
    this.#held += bytes;
    this.#heldBy.set(client, clientHeld + bytes);
    return true;
  }

  give(client: string, bytes: number): void {
    this.#held -= bytes;
    const clientHeld = (this.#heldBy.get(client) ?? 0) - bytes;
    // Forgotten at zero: one entry per client holding bodies right now, not per client ever seen.
    if (clientHeld > 0) this.#heldBy.set(client, clientHeld);
    else this.#heldBy.delete(client);
  }
}
