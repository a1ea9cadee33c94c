/**
 * Offline stand-in for the slice of Stripe's API this service calls.
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
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface OfflineStripe {
  readonly url: string;
  readonly port: number;
  readonly requests: ReadonlyArray<RecordedStripeRequest>;
  readonly sessions: ReadonlyMap<string, Record<string, unknown>>;
  readonly refunds: ReadonlyMap<string, Record<string, unknown>>;
  /** Makes an event listable by GET /v1/events, as Stripe keeps them for 30 days. */
  addEvent(event: Record<string, unknown>, options?: { delivered?: boolean }): void;
  failNext(count: number, status?: number): void;
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export interface RecordedStripeRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  params: Record<string, unknown>;
}

type Params = Record<string, unknown>;
/** The body is serialized up front so a replay is byte-identical even if the object changes later, as on Stripe. */
interface Reply { status: number; body: string; headers?: Record<string, string> }
/** `reply` stays undefined while the first request with the key is still executing. */
interface IdempotencyRecord { fingerprint: string; reply?: Reply }

/** A rejection raised before an endpoint began executing; Stripe saves no idempotent result for these. */
class StripeApiError extends Error {
  constructor(readonly status: number, readonly error: Params) {
    super(String(error.message));
  }
}

const invalid = (message: string, param?: string, code?: string) =>
  new StripeApiError(400, { type: 'invalid_request_error', code, message, param });
const missing = (param: string) => invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
const idempotencyError = (status: number, message: string) => new StripeApiError(status, { type: 'idempotency_error', message });
const unauthorized = (message: string) => new StripeApiError(401, { type: 'invalid_request_error', message });

export async function startOfflineStripe(options: { port?: number; host?: string } = {}): Promise<OfflineStripe> {
  const host = options.host ?? '127.0.0.1';
  const requests: RecordedStripeRequest[] = [];
  const sessions = new Map<string, Params>();
  const refunds = new Map<string, Params>();
  const events: Array<{ event: Params; delivered: boolean }> = [];
  const idempotency = new Map<string, IdempotencyRecord>();
  const closing = new AbortController();
  let failures = { remaining: 0, status: 500 };
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
      const params = parseForm(method === 'POST' ? await readBody(req) : search.slice(1));
      requests.push({ method, path: pathname, idempotencyKey: key, params });
      if (failures.remaining > 0) {
        failures.remaining -= 1;
        throw new StripeApiError(failures.status, { type: 'api_error', message: 'Simulated Stripe outage (failNext).' });
      }
      authenticate(req.headers.authorization);
      // Stripe ignores idempotency keys on GET and DELETE.
      const reply = method === 'POST' && key !== undefined
        ? await idempotent(key, params, () => execute(method, pathname, params))
        : await execute(method, pathname, params);
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
        throw idempotencyError(409, `There is currently another in-progress request using this idempotency key (that probably means you submitted twice, and the other request is still going through): ${key}. Please try again later.`);
      }
      if (saved.fingerprint !== fingerprint) {
        throw idempotencyError(400, `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`);
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
    if (method === 'POST' && path === '/v1/checkout/sessions') return ok(createSession(params));
    if (method === 'POST' && path === '/v1/refunds') return ok(createRefund(params));
    if (method === 'GET' && path === '/v1/events') return ok(listEvents(params));
    const id = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && id !== undefined) {
      const session = sessions.get(id);
      if (session !== undefined) return ok(session);
      throw new StripeApiError(404, { type: 'invalid_request_error', code: 'resource_missing', param: 'session', message: `No such checkout.session: '${id}'` });
    }
    throw new StripeApiError(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}). This is the offline Stripe stand-in; it only implements Checkout Session create and retrieve, refund create and event list.` });
  }

  function createSession(params: Params): Params {
    if (params.mode === undefined) throw missing('mode');
    if (!['payment', 'setup', 'subscription'].includes(params.mode as string)) throw invalid('Invalid mode: must be one of payment, setup, or subscription', 'mode');
    const lineItems = params.line_items;
    if (!Array.isArray(lineItems) || lineItems.length === 0) throw missing('line_items');
    let amount = 0;
    let currency: string | undefined;
    lineItems.forEach((item: unknown, i) => {
      const at = `line_items[${i}]`;
      const priceData = isRecord(item) ? item.price_data : undefined;
      // Price ids would need a price catalogue; inline price_data is all this service sends.
      if (!isRecord(item) || !isRecord(priceData)) throw invalid(`The offline Stripe only supports ${at}[price_data].`, `${at}[price_data]`);
      if (typeof priceData.currency !== 'string') throw missing(`${at}[price_data][currency]`);
      const itemCurrency = priceData.currency.toLowerCase();
      if (currency !== undefined && itemCurrency !== currency) throw invalid('All line_items must use the same currency.', `${at}[price_data][currency]`);
      currency = itemCurrency;
      amount += integer(priceData.unit_amount, `${at}[price_data][unit_amount]`) * integer(item.quantity, `${at}[quantity]`);
    });
    const id = `cs_test_${randomId(58)}`;
    const created = Math.floor(Date.now() / 1000);
    const session: Params = {
      id, object: 'checkout.session',
      amount_subtotal: amount, amount_total: amount, currency,
      cancel_url: params.cancel_url ?? null, success_url: params.success_url ?? null,
      client_reference_id: params.client_reference_id ?? null, client_secret: null,
      created, expires_at: created + 24 * 60 * 60,
      customer: null, customer_details: null, customer_email: params.customer_email ?? null,
      invoice: null, livemode: false, locale: null,
      metadata: isRecord(params.metadata) ? params.metadata : {},
      mode: params.mode, payment_intent: null, payment_link: null, payment_method_types: ['card'],
      payment_status: 'unpaid', setup_intent: null, status: 'open', subscription: null,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: 'hosted', url: `${url}/c/pay/${id}`,
    };
    sessions.set(id, session);
    return session;
  }

  // The stand-in does not know PaymentIntents, so it needs the amount the service always sends.
  function createRefund(params: Params): Params {
    if (typeof params.payment_intent !== 'string') throw missing('payment_intent');
    const refund: Params = {
      id: `re_test_${randomId(24)}`, object: 'refund',
      amount: integer(params.amount, 'amount'), currency: null, charge: null,
      created: Math.floor(Date.now() / 1000),
      metadata: isRecord(params.metadata) ? params.metadata : {},
      payment_intent: params.payment_intent, reason: params.reason ?? null, status: 'succeeded',
    };
    refunds.set(refund.id as string, refund);
    return refund;
  }

  // Newest first, cursor by starting_after, like Stripe's list endpoints.
  function listEvents(params: Params): Params {
    const created = isRecord(params.created) ? params.created : {};
    const gte = created.gte === undefined ? 0 : integer(created.gte, 'created[gte]');
    const limit = params.limit === undefined ? 10 : integer(params.limit, 'limit');
    if (limit < 1 || limit > 100) throw invalid('limit must be between 1 and 100', 'limit');
    let matching = events
      .filter((e) => (e.event.created as number) >= gte)
      .filter((e) => params.delivery_success === undefined || String(e.delivered) === params.delivery_success)
      .map((e) => e.event)
      .sort((a, b) => (b.created as number) - (a.created as number));
    if (typeof params.starting_after === 'string') {
      const at = matching.findIndex((e) => e.id === params.starting_after);
      matching = at === -1 ? [] : matching.slice(at + 1);
    }
    return { object: 'list', url: '/v1/events', has_more: matching.length > limit, data: matching.slice(0, limit) };
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // Also reached when close() aborts a delayed request; its socket is already gone then.
      if (res.headersSent || res.destroyed) return;
      send(res, { status: 500, body: JSON.stringify({ error: { type: 'api_error', message: String(err) } }) }, {});
    });
  });
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url, port, requests, sessions, refunds,
    addEvent(event, { delivered = false } = {}) { events.push({ event, delivered }); },
    failNext(count, status = 500) { failures = { remaining: count, status }; },
    setDelay(ms) { delayMs = ms; },
    close: () =>
      (closed ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // stripe-node keeps connections alive; without this close() would wait for them to idle out.
        server.closeAllConnections();
        closing.abort();
      })),
  };
}

function authenticate(authorization: string | undefined): void {
  if (authorization === undefined) throw unauthorized("You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').");
  if (!/^Bearer sk_\S+$/.test(authorization)) throw unauthorized('Invalid API Key provided. The offline Stripe accepts any secret key starting with sk_.');
}

/** Parses `a[b][0][c]=v` pairs into nested objects; objects keyed 0..n become arrays, as Stripe's parser does. */
function parseForm(body: string): Params {
  const root: Params = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(name);
    const path = match ? [match[1]!, ...Array.from(match[2]!.matchAll(/\[([^[\]]*)\]/g), (m) => m[1]!)] : [];
    if (path.length === 0 || path.includes('__proto__') || path.slice(0, -1).includes('')) throw invalid(`Invalid parameter name: ${name}`, name);
    let node = root;
    for (const segment of path.slice(0, -1)) {
      const child = Object.hasOwn(node, segment) ? node[segment] : (node[segment] = {});
      if (!isRecord(child)) throw invalid(`Invalid parameter name: ${name} (conflicts with a scalar value)`, name);
      node = child;
    }
    // A trailing `[]` appends, so `expand[]=x` from other clients works too.
    const last = path.at(-1)!;
    node[last === '' ? String(Object.keys(node).length) : last] = value;
  }
  return arraysFromIndexes(root) as Params;
}

function arraysFromIndexes(value: unknown, key?: string): unknown {
  // Metadata is a string map even when its keys look like indexes.
  if (!isRecord(value) || key === 'metadata') return value;
  const keys = Object.keys(value);
  if (keys.length > 0 && keys.every((k) => /^\d+$/.test(k))) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((k) => arraysFromIndexes(value[k], k));
  }
  return Object.fromEntries(keys.map((k) => [k, arraysFromIndexes(value[k], k)]));
}

/** Key-order-independent serialization, so replays compare parameters rather than their encoding order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function integer(value: unknown, param: string): number {
  if (value === undefined) throw missing(param);
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw invalid(`Invalid integer: ${JSON.stringify(value)}`, param, 'parameter_invalid_integer');
  return Number(value);
}

function isRecord(value: unknown): value is Params {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const ok = (object: Params): Reply => ({ status: 200, body: JSON.stringify(object, null, 2) });

function send(res: ServerResponse, reply: Reply, headers: Record<string, string>): void {
  const content = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(reply.body) };
  res.writeHead(reply.status, { ...content, 'Request-Id': `req_${randomId(14)}`, ...headers, ...reply.headers }).end(reply.body);
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
function randomId(length: number): string {
  return Array.from(randomBytes(length), (byte) => ALPHABET[byte % ALPHABET.length]).join('');
}
