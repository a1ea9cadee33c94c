// Quoting a value we did not choose in an error or a log line, bounded and escaped.

/**
 * Most characters of a value that a message quotes: enough for any id of ours (ord_ and
 * 32 hex digits), far less than the 500 Stripe allows in a metadata value.
 */
const QUOTED_MAX_CHARS = 80;
// Escaped beyond what JSON.stringify escapes: C1 controls, line and paragraph separators, and the
// bidirectional overrides that make a dashboard or terminal show text other than what is stored.
const UNSAFE = /[\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * A value someone else chose (a metadata value the merchant set in Stripe, the start of an app's
 * answer to a notification) as an error message or log line may quote it: at most
 * QUOTED_MAX_CHARS characters, then an ellipsis, JSON-quoted with every control character
 * escaped, so that it can neither forge a line of its own nor fill last_error. Stripe's own ids need no quoting. Free text (descriptions, names, emails) is
 * never quoted at all: it is personal data, and no operator needs it to act.
 */
export function quoted(value: string): string {
  const chars = Array.from(value.slice(0, 2 * QUOTED_MAX_CHARS));
  const head = chars.length > QUOTED_MAX_CHARS || value.length > 2 * QUOTED_MAX_CHARS ? `${chars.slice(0, QUOTED_MAX_CHARS).join('')}…` : value;
  return JSON.stringify(head).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
