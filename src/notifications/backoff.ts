// When a failed delivery is tried again: exponential backoff with jitter, as Stripe retries its
// own webhooks for about three days. The wait doubles from 10 s up to 6 h; each is drawn between
// 80 % and 120 % of that, so endpoints that failed together (the app was down) are not all
// retried in the same second when it comes back.
const FIRST_RETRY_MS = 10_000;
const LONGEST_WAIT_MS = 6 * 3_600_000;
const JITTER = 0.2;

/**
 * The default of APP_WEBHOOK_MAX_ATTEMPTS: the first attempt and 22 retries, whose nominal waits
 * add up to 71 h, so the last attempt comes about three days after the outcome.
 */
export const DEFAULT_DELIVERY_ATTEMPTS = 23;

/** The nominal wait after the `attempt`-th failed attempt (1-based). */
export function nominalRetryDelayMs(attempt: number): number {
  return Math.min(LONGEST_WAIT_MS, FIRST_RETRY_MS * 2 ** Math.min(attempt - 1, 30));
}

/** The wait after the `attempt`-th failed attempt, jittered; `random` is in [0, 1). */
export function retryDelayMs(attempt: number, random: number = Math.random()): number {
  return Math.round(nominalRetryDelayMs(attempt) * (1 - JITTER + 2 * JITTER * random));
}

/**
 * The longest an app's Retry-After holds a delivery back. An hour covers a deploy or a rate
 * limit's window, and from the 10th attempt the backoff waits longer than that anyway; a longer
 * ask (a proxy's default, a day's maintenance page, a typo) would otherwise hold every
 * notification of the endpoint, taken at its word, for as long as it says.
 */
export const LONGEST_RETRY_AFTER_MS = 3_600_000;

/** What the app's Retry-After holds its endpoint back by: the ask, capped. */
export function honouredRetryAfterMs(askedMs: number): number {
  return Math.min(askedMs, LONGEST_RETRY_AFTER_MS);
}
