// The wire of the offline Stripe stand-in: Stripe's form encoding, its error shape, replies.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export type Params = Record<string, unknown>;
/** The body is serialized up front so a replay is byte-identical even if the object changes later, as on Stripe. */
export interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}
/** `reply` stays undefined while the first request with the key is still executing. */
export interface IdempotencyRecord {
  fingerprint: string;
  reply?: Reply;
}

/** A rejection raised before an endpoint began executing; Stripe saves no idempotent result for these. */
export class StripeApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: Params,
  ) {
    super(String(error.message));
  }
}

export const invalid = (message: string, param?: string, code?: string) => new StripeApiError(400, { type: 'invalid_request_error', code, message, param });
export const missing = (param: string) => invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
export const idempotencyError = (status: number, message: string) => new StripeApiError(status, { type: 'idempotency_error', message });
const unauthorized = (message: string) => new StripeApiError(401, { type: 'invalid_request_error', message });

export function authenticate(authorization: string | undefined): void {
  if (authorization === undefined)
    throw unauthorized(
      "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
    );
  if (!/^Bearer sk_\S+$/.test(authorization)) throw unauthorized('Invalid API Key provided. The offline Stripe accepts any secret key starting with sk_.');
}

/** Parses `a[b][0][c]=v` pairs into nested objects; objects keyed 0..n become arrays, as Stripe's parser does. */
export function parseForm(body: string): Params {
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
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export function integer(value: unknown, param: string): number {
  if (value === undefined) throw missing(param);
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw invalid(`Invalid integer: ${JSON.stringify(value)}`, param, 'parameter_invalid_integer');
  return Number(value);
}

export function isRecord(value: unknown): value is Params {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export const ok = (object: Params): Reply => ({ status: 200, body: JSON.stringify(object, null, 2) });

export function send(res: ServerResponse, reply: Reply, headers: Record<string, string>): void {
  const content = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(reply.body) };
  res.writeHead(reply.status, { ...content, 'Request-Id': `req_${randomId(14)}`, ...headers, ...reply.headers }).end(reply.body);
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export function randomId(length: number): string {
  return Array.from(randomBytes(length), (byte) => ALPHABET[byte % ALPHABET.length]).join('');
}
