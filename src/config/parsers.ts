// The checks the settings' tables share: zod schemas from a variable's text to its value, unit
// included. A business module's table may use httpUrl (through src/business-module.ts).
import { z } from 'zod';

export const int = (min: number, max: number) => z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));

export const toMs = (seconds: number) => seconds * 1000;

/** A comma-separated list, each item trimmed and empty ones dropped. */
const commaList = z.string().transform((s) =>
  s
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== ''),
);

// Standard Webhooks' secrets: whsec_ and the base64 of the key, which the specification wants
// between 24 and 64 bytes.
const APP_SECRET_MIN_BYTES = 24;
const APP_SECRET_MAX_BYTES = 64;
function isStandardWebhookSecret(secret: string): boolean {
  const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret)?.[1];
  if (!key || key.length % 4 !== 0) return false;
  const bytes = Buffer.from(key, 'base64').length;
  return bytes >= APP_SECRET_MIN_BYTES && bytes <= APP_SECRET_MAX_BYTES;
}

/** OpenTelemetry's `key=value,key=value` lists (headers, resource attributes), checked and kept as written. */
export const keyValueList = z.string().regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, 'must be key=value pairs, comma-separated');

/** The only OTLP protocol the exporter speaks (src/tracing/tracing-sdk.ts). */
export const otlpProtocol = z.literal('http/json', 'must be http/json: the service sends OTLP as JSON over HTTP');

/** An http or https URL (a module's setting may use it too). */
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

// Stripe's signing secrets are `whsec_` and 32 or more base64 characters (the CLI's: 64 hex), its
// API keys `sk_`/`rk_`, the mode and 24 or more. A shorter value is a placeholder or a truncated
// paste, and `whsec_` alone is worse: the webhook then verifies anything signed with the empty key.
// Quotes or spaces are not in any of them: they are a paste from a .env file gone wrong.
const STRIPE_SECRET_MIN_CHARS = 24;
const webhookSecret = z
  .string()
  .regex(
    new RegExp(`^whsec_[\\w+/=-]{${STRIPE_SECRET_MIN_CHARS},}$`),
    `each secret must be whsec_ followed by at least ${STRIPE_SECRET_MIN_CHARS} letters or digits, as Stripe shows it`,
  );
export const stripeKey = z
  .string()
  .regex(
    new RegExp(`^(sk|rk)_(test|live)_\\w{${STRIPE_SECRET_MIN_CHARS},}$`),
    `must be sk_ or rk_, test_ or live_, then at least ${STRIPE_SECRET_MIN_CHARS} letters or digits`,
  );

/** STRIPE_WEBHOOK_SECRET: one or more of Stripe's signing secrets. */
export const webhookSecrets = commaList.pipe(z.array(webhookSecret).min(1, 'must list at least one secret')).transform((secrets) => Object.freeze(secrets));

/** APP_WEBHOOK_URL: none or more http(s) endpoints, each once. */
export const appWebhookUrls = commaList
  .pipe(z.array(z.url({ protocol: /^https?$/, error: 'each URL must be an http(s) URL' })))
  .refine((urls) => new Set(urls).size === urls.length, 'lists a URL twice')
  // A password in the URL would be stored with every delivery queued for it, and shown
  // wherever the endpoint is; the signature authenticates the sender. (zod runs this check after
  // a failed one too, so it reads only the URLs that parse.)
  .refine(
    (urls) => urls.every((url) => !URL.canParse(url) || (new URL(url).username === '' && new URL(url).password === '')),
    'must not carry user:password@ (the signature authenticates each notification)',
  )
  .transform((urls) => Object.freeze(urls));

/** APP_WEBHOOK_SECRET: none or more Standard Webhooks secrets. */
export const appWebhookSecrets = commaList
  .pipe(
    z.array(
      z
        .string()
        .refine(
          isStandardWebhookSecret,
          `each secret must be whsec_ followed by the base64 of ${APP_SECRET_MIN_BYTES} to ${APP_SECRET_MAX_BYTES} random bytes`,
        ),
    ),
  )
  .transform((secrets) => Object.freeze(secrets));

// Tokens guard money-adjacent routes: short ones are guessable.
// A token travels in an Authorization header, which carries it as one run of visible ASCII: one
// with a space (often a trailing one pasted into a .env file) would never match a request.
export const token = z
  .string()
  .min(16, 'must be at least 16 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be letters, digits and punctuation only, without spaces or line breaks (check for a trailing space)');
// In production a token also needs this many different characters: that refuses what a person
// types (`aaaa…`, `passwordpassword`, `changeme-changeme`), never `openssl rand -hex 32` (64 hex
// characters show fewer than 10 of the 16 digits about once in 10^11) nor the development tokens.
export const TOKEN_MIN_DISTINCT_CHARS = 10;
export const TOKEN_EXAMPLE = 'a long random string (openssl rand -hex 32)';
