// The app's Retry-After, read at the edge. Standard Webhooks asks a sender to throttle on 429, 502,
// 503 and 504 and to honour `retry-after`: those say the app (or its proxy) is overloaded or being
// deployed, and when to come back. On any other status the header means nothing to a sender (a
// 3xx's is about the redirect), so it is ignored there.
const THROTTLING_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);
/** RFC 9110's preferred HTTP-date, as servers send it (`Date.prototype.toUTCString()`). */
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * How long the app asked to wait, in ms: a throttling answer's `Retry-After` in delta-seconds
 * (`3600`) or as an HTTP-date (0 when that is past). null for another status, no header, or one
 * that is neither (the obsolete RFC 850 and asctime dates included): the normal backoff applies.
 */
export function askedRetryAfterMs(statusCode: number, header: string | undefined, now: number = Date.now()): number | null {
  if (!THROTTLING_STATUSES.has(statusCode) || header === undefined) return null;
  const value = header.trim();
  // Any number of digits: a huge one is capped where it is honoured (backoff.ts), not refused.
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  if (!IMF_FIXDATE.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
