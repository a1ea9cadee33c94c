/**
 * Offline stand-in for the slice of Stripe's API this service calls: this file is the server and
 * Stripe's idempotency; resources.ts the objects; wire.ts the encoding and error shapes.
 *
 * DEVELOPMENT AND TEST ONLY. It exists so that local development without a
 * STRIPE_SECRET_KEY, and the test suite, can create Checkout Sessions with no
 * network. It must never be used when NODE_ENV=production; the caller enforces
 * that. It accepts any `sk_` key and keeps all state in memory.
 *
 * It is a real HTTP server rather than a mock of the `stripe` package, so the
 * unmodified SDK's encoding, idempotency keys, retries and error classes are
 * exercised exactly as they are against api.stripe.com.
 *
 * Stripe rules reproduced:
 * - form-encoded bodies in bracket notation (`line_items[0][price_data][currency]`);
 * - Bearer `sk_` authentication, Stripe's error JSON shape and status codes;
 * - idempotent requests (https://docs.stripe.com/api/idempotent_requests): a key
 *   replays the first response with `Idempotent-Replayed: true`, is refused for
 *   other parameters (400), answers 409 while the first request is in flight,
 *   and saves nothing when the request was rejected before an endpoint began
 *   executing (bad parameters, auth, simulated outages);
 * - no `Stripe-Should-Retry` header, so stripe-node retries 409 and 5xx itself.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHECKOUT_PAGE_PATH, checkoutPage } from './checkout-page.js';
import type { OfflineEntitlement } from './entitlements.js';
import { IMPLEMENTED, Resources } from './resources.js';
import {
  authenticate,
  canonical,
  idempotencyError,
  isRecord,
  ok,
  parseForm,
  readBody,
  send,
  StripeApiError,
  type IdempotencyRecord,
  type Params,
  type Reply,
} from './wire.js';

// Not `import { createServer } from 'node:http'`: that would load Node's undici (src/stripe/sdk.ts says why).
const { createServer } = process.getBuiltinModule('node:http');

export interface OfflineStripe {
  readonly url: string;
  readonly port: number;
  readonly requests: ReadonlyArray<RecordedStripeRequest>;
  readonly sessions: ReadonlyMap<string, Record<string, unknown>>;
  readonly refunds: ReadonlyMap<string, Record<string, unknown>>;
  readonly subscriptions: ReadonlyMap<string, Record<string, unknown>>;
  /** Makes an event listable and retrievable by GET /v1/events, as Stripe keeps them for 30 days, and its object retrievable. */
  addEvent(event: Record<string, unknown>, options?: { delivered?: boolean }): void;
  /** Makes a thin notification listable and retrievable by GET /v2/core/events. */
  addThinEvent(notification: Record<string, unknown>): void;
  /** Makes any object with an `id` retrievable by GET of its URL (/v1/invoices/in_…), as a thin notification's related_object.url. */
  addObject(object: Record<string, unknown>): void;
  /** Makes a subscription retrievable and updatable, as if a customer had completed its checkout. */
  addSubscription(subscription: Record<string, unknown>): void;
  /** Makes a Price (or Product) retrievable and listable, and a Price sellable by Checkout; adding one again replaces it. */
  addPrice(price: Record<string, unknown>): void;
  addProduct(product: Record<string, unknown>): void;
  /** Sets the customer's active entitlements, as GET /v1/entitlements/active_entitlements lists them. */
  setActiveEntitlements(customerId: string, entitlements: readonly OfflineEntitlement[]): void;
  /** Adds an active sum meter for the event_name (Billing Meters: meters.ts); its id. */
  addMeter(eventName: string): string;
  /** What the meter of the event_name recorded for the customer: each identifier once per 24 hours of the stand-in's clock. */
  meterTotal(eventName: string, customer: string): number;
  /** Moves the stand-in's clock (meter identifiers' window, meter event timestamps) forward. */
  advanceClock(ms: number): void;
  /** The next `count` requests to `path` are executed, and their answers lost: the connection drops after the work is done. */
  loseAnswers(path: string, count: number): void;
  failNext(count: number, status?: number): void;
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export interface RecordedStripeRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  /** The Stripe-Context header: the connected account the call acts in. */
  stripeContext: string | undefined;
  params: Record<string, unknown>;
}

/** Where `npm start` runs the stand-in when the port is free (else any port): a place scripts can find it. */
export const OFFLINE_STRIPE_PORT = 12111;

/** POST a snapshot event (JSON) here: listed, retrievable, and its object retrievable (send-event --thin). */
export const TELL_EVENT_PATH = '/_offline/events';

export async function startOfflineStripe(options: { port?: number; host?: string } = {}): Promise<OfflineStripe> {
  const host = options.host ?? '127.0.0.1';
  const requests: RecordedStripeRequest[] = [];
  const resources = new Resources(() => url);
  const idempotency = new Map<string, IdempotencyRecord>();
  const closing = new AbortController();
  let failures = { remaining: 0, status: 500 };
  let lost = { path: '', remaining: 0 };
  let delayMs = 0;
  let url = '';
  let closed: Promise<void> | undefined;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const { pathname, search } = new URL(req.url ?? '/', url);
    const rawKey = req.headers['idempotency-key'];
    const key = typeof rawKey === 'string' ? rawKey : undefined;
    const echo: Record<string, string> = key === undefined ? {} : { 'Idempotency-Key': key };
    try {
      if (method === 'POST' && pathname === TELL_EVENT_PATH) {
        // Not Stripe's: how `npm run send-event -- --thin` tells this stand-in of the snapshot event
        // its thin notification names, so that the worker's fetch finds it.
        const event = JSON.parse(await readBody(req)) as Params;
        addEvent(event);
        send(res, ok(event), {});
        return;
      }
      if (method === 'GET' && pathname.startsWith(CHECKOUT_PAGE_PATH)) {
        // Not Stripe's API either: the page a session's `url` opens in a browser (checkout-page.ts).
        const session = resources.sessions.get(decodeURIComponent(pathname.slice(CHECKOUT_PAGE_PATH.length)));
        res.writeHead(session ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' }).end(checkoutPage(session));
        return;
      }
      const params = parseForm(method === 'POST' ? await readBody(req) : search.slice(1));
      const context = req.headers['stripe-context'];
      requests.push({ method, path: pathname, idempotencyKey: key, stripeContext: typeof context === 'string' ? context : undefined, params });
      if (failures.remaining > 0) {
        failures.remaining -= 1;
        throw new StripeApiError(failures.status, { type: 'api_error', message: 'Simulated Stripe outage (failNext).' });
      }
      authenticate(req.headers.authorization);
      // Stripe ignores idempotency keys on GET and DELETE.
      const reply =
        method === 'POST' && key !== undefined
          ? await idempotent(key, params, () => execute(method, pathname, params))
          : await execute(method, pathname, params);
      if (pathname === lost.path && lost.remaining > 0) {
        lost.remaining -= 1;
        res.destroy();
        return;
      }
      send(res, reply, echo);
    } catch (err) {
      if (!(err instanceof StripeApiError)) throw err;
      send(res, { status: err.status, body: JSON.stringify({ error: err.error }) }, echo);
    }
  }

  // Stripe also refuses a key reused on another endpoint; our keys name their operation, so that is not reproduced.
  async function idempotent(key: string, params: Params, run: () => Promise<Reply>): Promise<Reply> {
    const fingerprint = canonical(params);
    const saved = idempotency.get(key);
    if (saved !== undefined) {
      if (saved.reply === undefined) {
        throw idempotencyError(
          409,
          `There is currently another in-progress request using this idempotency key (that probably means you submitted twice, and the other request is still going through): ${key}. Please try again later.`,
        );
      }
      if (saved.fingerprint !== fingerprint) {
        throw idempotencyError(
          400,
          `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
        );
      }
      return { ...saved.reply, headers: { 'Idempotent-Replayed': 'true' } };
    }
    const record: IdempotencyRecord = { fingerprint };
    idempotency.set(key, record);
    try {
      record.reply = await run();
      return record.reply;
    } finally {
      if (record.reply === undefined) idempotency.delete(key);
    }
  }

  async function execute(method: string, path: string, params: Params): Promise<Reply> {
    if (delayMs > 0) await sleep(delayMs, undefined, { signal: closing.signal });
    const reply = resources.route(method, path, params);
    if (reply) return reply;
    throw new StripeApiError(404, {
      type: 'invalid_request_error',
      message: `Unrecognized request URL (${method}: ${path}). This is the offline Stripe stand-in; it implements ${IMPLEMENTED}.`,
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Also reached when close() aborts a delayed request; its socket is already gone then.
      if (res.headersSent || res.destroyed) return;
      send(res, { status: 500, body: JSON.stringify({ error: { type: 'api_error', message: String(err) } }) }, {});
    });
  });
  function addEvent(event: Params, { delivered = false } = {}): void {
    resources.events.push({ event, delivered });
    const object = isRecord(event.data) ? event.data.object : undefined;
    if (isRecord(object) && typeof object.id === 'string') resources.objects.set(object.id, object);
  }

  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url,
    port,
    requests,
    sessions: resources.sessions,
    refunds: resources.refunds,
    subscriptions: resources.subscriptions,
    addEvent,
    addThinEvent(notification) {
      resources.thinEvents.push(notification);
    },
    addObject(object) {
      resources.objects.set(object.id as string, object);
    },
    addSubscription(subscription) {
      resources.subscriptions.set(subscription.id as string, subscription);
    },
    addPrice(price) {
      resources.catalogue.prices.set(price.id as string, price);
    },
    addProduct(product) {
      resources.catalogue.products.set(product.id as string, product);
    },
    setActiveEntitlements(customerId, entitlements) {
      resources.entitlements.byCustomer.set(customerId, entitlements);
    },
    addMeter: (eventName) => resources.meters.addMeter(eventName),
    meterTotal: (eventName, customer) => resources.meters.total(eventName, customer),
    advanceClock(ms) {
      resources.meters.clockOffsetMs += ms;
    },
    loseAnswers(path, count) {
      lost = { path, remaining: count };
    },
    failNext(count, status = 500) {
      failures = { remaining: count, status };
    },
    setDelay(ms) {
      delayMs = ms;
    },
    close: () =>
      (closed ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // stripe-node keeps connections alive; without this close() would wait for them to idle out.
        server.closeAllConnections();
        closing.abort();
      })),
  };
}
