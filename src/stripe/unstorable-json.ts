// A webhook body's check against what Postgres stores, made by parseWebhook
// (src/stripe/webhook-event.ts) before anything is stored; its fuzz tests compare it with Postgres
// itself (test/http/webhook-fuzz-regressions.test.ts).

/** Far beyond anything Stripe sends, far below what Postgres stores: numeric takes up to 131072
 * digits before the point and 16383 after, so 1000 digits and a 1000 exponent always fit; its
 * recursive JSON parsers cope with about 10k levels of nesting at the default max_stack_depth. */
const MAX_NUMBER_LENGTH = 1000;
const MAX_JSON_DEPTH = 512;

/**
 * Why Postgres's jsonb input would refuse this JSON text (already valid for JSON.parse), or
 * undefined. Payloads are kept as json text (sql/0017), which takes more, but not safely: a NUL
 * escape fails every `payload #>> …` that reads the row (the modules' lookups), deep nesting
 * exhausts json's parser as well, and refusing what jsonb refuses keeps a cast back possible.
 * One pass over the text, no recursion: \u0000 (jsonb cannot hold NUL), an unpaired
 * UTF-16 surrogate escape, a number beyond what numeric holds, nesting deep enough to exhaust
 * Postgres's stack (its parser recurses, and 100k levels fit in a 200 KB body).
 */
export function unstorableJson(text: string): string | undefined {
  let depth = 0;
  // The next backslash at or after i; text.length when there is none.
  let backslash = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // A string without a backslash cannot hold what jsonb refuses: jump to its closing quote
      // (the text is valid JSON). Most of an event is such strings, and indexOf is native.
      if (backslash < i) {
        backslash = text.indexOf('\\', i);
        if (backslash === -1) backslash = text.length;
      }
      const close = text.indexOf('"', i + 1);
      if (close !== -1 && backslash > close) {
        i = close;
        continue;
      }
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) !== 0x5c /* \ */) continue;
        i++;
        if (text[i] !== 'u') continue;
        const unit = Number.parseInt(text.slice(i + 1, i + 5), 16);
        i += 4;
        if (unit === 0) return 'contains a NUL character';
        if (unit >= 0xdc00 && unit <= 0xdfff) return 'contains an unpaired UTF-16 surrogate';
        if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = text.startsWith('\\u', i + 1) ? Number.parseInt(text.slice(i + 3, i + 7), 16) : Number.NaN;
          if (!(low >= 0xdc00 && low <= 0xdfff)) return 'contains an unpaired UTF-16 surrogate';
          i += 6;
        }
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > MAX_JSON_DEPTH) return 'nested too deeply';
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      // A number (valid JSON, outside a string): every character up to the next one that cannot
      // be part of it. Scanned by hand: a regex match would allocate for each of an event's numbers.
      let end = i + 1;
      let exponent = -1;
      for (; end < text.length; end++) {
        const d = text.charCodeAt(end);
        if (d === 0x65 /* e */ || d === 0x45 /* E */) exponent = end + 1;
        else if (!((d >= 0x30 && d <= 0x39) || d === 0x2e /* . */ || d === 0x2b /* + */ || d === 0x2d /* - */)) break;
      }
      if (end - i > MAX_NUMBER_LENGTH) return 'a number is out of range';
      if (exponent !== -1 && Math.abs(Number(text.slice(exponent, end))) > MAX_NUMBER_LENGTH) return 'a number is out of range';
      i = end - 1;
    }
  }
  return undefined;
}
