// Stripe's thin event types. A thin notification of a v1 resource is typed `v1.<snapshot type>`
// (`v1.checkout.session.completed`) and handled as that type, once fulfilment has fetched the
// object; v2 resources' types (`v2.core.event_destination.ping`) have no snapshot counterpart.

const V1_PREFIX = 'v1.';

/**
 * Stripe's alert for an Event it failed to generate (so never delivered, never listed): its data
 * names the missed type and the object it was about (src/fulfilment/missed-event.ts).
 */
export const GENERATION_FAILURE_TYPE = 'v2.core.health.event_generation_failure.resolved';

/**
 * v1-typed thin notifications with no snapshot event and no object state to fetch: what happened
 * is the event's own `data`, which only GET /v2/core/events/:id carries (Billing Meters' reports of
 * meter events they refused after accepting them). Handlers see that data as the event's object.
 */
export const EVENT_DATA_TYPES: ReadonlySet<string> = new Set(['v1.billing.meter.error_report_triggered', 'v1.billing.meter.no_meter_found']);

export function isV1ThinType(type: string): boolean {
  return type.startsWith(V1_PREFIX);
}

/** Whether a stored event is a thin notification, by its type: snapshot types carry no version prefix. */
export function isThinType(type: string): boolean {
  return /^v\d+\./.test(type);
}

/** The snapshot event type a v1 thin type stands for: `v1.invoice.paid` → `invoice.paid`. */
export function snapshotTypeOf(type: string): string | undefined {
  return isV1ThinType(type) ? type.slice(V1_PREFIX.length) : undefined;
}

/**
 * Stands in for STRIPE_API_BASE when a path is resolved: only the resolved path is kept. https,
 * because for the special schemes the URL standard (and so Node) takes `\` for `/`.
 */
const RESOLVED_AGAINST = new URL('https://api.stripe.invalid');
/** What a server may decode before it splits a path: `.`, `/`, `\`, and `%` itself (`%252e`, decoded twice). */
const ENCODED_SEPARATOR = /%(?:2e|2f|5c|25)/gi;

/**
 * What a resolved path of Stripe's API is made of: ids and names, each segment of RFC 3986's
 * unreserved characters. Anything else (`..;`, which some servers take for `..`; an escape left
 * undecoded, `%c0%ae`; an empty segment) is no URL Stripe writes, and how a server would read it
 * cannot be known here: refused.
 */
const API_PATH = /^\/v[12](?:\/[\w.~-]+)+$/;

/** The longest related_object.url taken (Stripe's are a few dozen characters). */
export const MAX_API_URL_LENGTH = 2048;

/**
 * The path to GET for a thin notification's `related_object.url`, resolved the way a server
 * resolves it, or undefined when that lands outside Stripe's /v1/ and /v2/ API. The worker fetches
 * it with our secret key, so `/v1/../../x` must not reach another path of Stripe's host: what a
 * server may decode is decoded first, the dot segments are resolved (the URL standard's way), and
 * the resolved path (with the query as written) is what is fetched, so what is checked is what is
 * sent. Backslashes and a leading `//` (an authority, another host) are refused outright, and so is
 * a resolved path with anything but plain segments (API_PATH).
 */
export function apiPathOf(url: string): string | undefined {
  // Printable ASCII only: the URL standard drops tabs and newlines, which could make `/\t/host`
  // an authority after this check. As long as the webhook takes one, whoever stored it.
  if (url.length > MAX_API_URL_LENGTH || !/^\/[\x21-\x7e]*$/.test(url)) return undefined;
  // Only the path is decoded: a query (a v2 list's page token) is sent as Stripe wrote it.
  const pathEnd = url.search(/[?#]/);
  let decoded = pathEnd === -1 ? url : url.slice(0, pathEnd);
  for (let previous = ''; decoded !== previous;) {
    previous = decoded;
    decoded = decoded.replace(ENCODED_SEPARATOR, (escape) => decodeURIComponent(escape));
  }
  if (decoded.includes('\\') || decoded.startsWith('//')) return undefined;
  const resolved = new URL(decoded + (pathEnd === -1 ? '' : url.slice(pathEnd)), RESOLVED_AGAINST);
  if (resolved.origin !== RESOLVED_AGAINST.origin || !API_PATH.test(resolved.pathname)) return undefined;
  return resolved.pathname + resolved.search;
}
