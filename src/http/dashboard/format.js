// @ts-check
// How values read on the page: a payload as Stripe sent it, amounts as money, a business record's
// fields as one line.

/**
 * @typedef {{ kind: string, id: string, fields: Record<string, string | number | boolean | null> }} BusinessRecord
 */

/**
 * JSON text laid out two spaces a level, each token kept as written. The payload is shown as
 * Stripe sent it, and a parse would not give it back: 1e400 would become null,
 * 18446744073709551617 would be rounded, and of two equal keys one would be lost.
 * @param {string} text JSON (the server stored it as json, so its strings are terminated)
 */
export function layOut(text) {
  let out = '';
  let depth = 0;
  const newline = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (c === '"') {
      let end = i + 1;
      while (end < text.length && text.charAt(end) !== '"') end += text.charAt(end) === '\\' ? 2 : 1;
      out += text.slice(i, end + 1);
      i = end;
    } else if (c === '{' || c === '[') {
      const next = text.slice(i + 1).search(/\S/);
      const close = c === '{' ? '}' : ']';
      if (next !== -1 && text.charAt(i + 1 + next) === close) {
        out += c + close;
        i += 1 + next;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') {
      out += ',' + newline();
    } else if (c === ':') {
      out += ': ';
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}

/**
 * Where Stripe's API amounts keep two decimals that Intl's currency data drops: ISK (zero-decimal
 * since 2023, yet `100` is still 1 króna in the API) and HUF (two-decimal in charges). Stripe's
 * list of special cases: https://docs.stripe.com/currencies#special-cases
 * @type {Record<string, number>}
 */
const STRIPE_DIGITS = { isk: 2, huf: 2 };

/**
 * An amount in a currency's smallest unit (as Stripe and the catalog keep it) as money: 4900 chf is
 * CHF 49.00, 4900 jpy is JPY 4,900, 490000 isk is ISK 4,900. Intl knows each currency's minor-unit
 * digits (ISO 4217: 2 for most, 0 for JPY or KRW, 3 for KWD), which are Stripe's but for
 * STRIPE_DIGITS; a code Intl does not know is shown as stored.
 * @param {number} amount
 * @param {string} currency
 */
export function money(amount, currency) {
  try {
    const format = new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase(), currencyDisplay: 'code' });
    const digits = STRIPE_DIGITS[currency.toLowerCase()] ?? format.resolvedOptions().maximumFractionDigits ?? 2;
    // Intl puts a no-break space after the code: a plain one reads and searches the same.
    return format.format(amount / 10 ** digits).replace(/\u00a0/g, ' ');
  } catch {
    return amount + ' ' + currency;
  }
}

/**
 * A business record's fields as one line; an amount (amount, amount_paid, refunded_amount) as
 * money in `currency`, or in the record's own currency field.
 * @param {BusinessRecord['fields']} fields
 * @param {string} [currency]
 */
export function describeFields(fields, currency) {
  const unit = currency ?? (typeof fields.currency === 'string' ? fields.currency : undefined);
  return Object.entries(fields)
    .map(([name, value]) => {
      if (typeof value === 'number' && unit && /amount/.test(name)) return name + ' ' + money(value, unit);
      return name + ' ' + (value == null ? '–' : String(value));
    })
    .join(', ');
}
