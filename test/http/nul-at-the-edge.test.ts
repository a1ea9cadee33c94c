// A NUL character (U+0000), which Postgres text cannot store, in any text the API takes is a 400
// naming where it was, never a 500: every operation docs/openapi.json describes is walked, and each
// of its path and query parameters, each text field of its body (each branch of a oneOf, each
// item of a list) and its Idempotency-Key is given one in turn, the rest of the request valid. A
// new operation with a body fails here until it has a valid body below to vary. Run as a process,
// to read its log: nothing of it may be logged as an error.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { processesForFile, type ChildService } from '../support/child-service.js';
import { openApi } from '../support/openapi.js';
import { ADMIN_TOKEN, API_TOKEN } from '../support/service.js';

const file = processesForFile({ ROLE: 'web' });
let child: ChildService;

// The webhook's body is Stripe's, signed: test/http/webhook-fuzz-regressions.test.ts sends it NULs.
const NOT_WALKED = new Set(['POST /webhooks/stripe']);

/** A valid body of each operation that takes one, each of whose text fields is given a NUL in turn. */
const VALID_BODIES: Record<string, Record<string, unknown>> = {
  'POST /api/checkout': { package_id: 'starter', account_id: 'acct_nul', email: 'buyer@example.com' },
  'POST /api/subscriptions': { plan_id: 'pro_monthly', account_id: 'acct_nul', email: 'buyer@example.com' },
  'POST /api/accounts/{id}/runs': { quantity: 1 },
  'POST /api/accounts/{id}/runs/{run_id}/reverse': {},
  'POST /admin/api/notifications/replay': { ids: ['msg_nul'] },
  'POST /admin/api/packages': { id: 'nul_pkg', name: 'Nul', amount: 100, currency: 'chf', credits: 1, features: ['nul'] },
  'PATCH /admin/api/packages/{id}': { name: 'Nul' },
  'POST /admin/api/plans': {
    id: 'nul_plan',
    name: 'Nul',
    amount: 100,
    currency: 'chf',
    credits: 0,
    interval: 'month',
    stripe_price_id: 'price_nul',
    features: ['nul'],
    meter_event_name: 'nul_runs',
  },
  'PATCH /admin/api/plans/{id}': { name: 'Nul' },
  'POST /admin/api/orders/{id}/refund': { amount: 1 },
  'POST /admin/api/usage-reports/replay': { ids: [`usage_${'0'.repeat(32)}`] },
};
/** A valid value of each path parameter and required query parameter, where the one varied is not. */
const VALID_PARAMETERS: Record<string, string> = { run_id: `run_${'0'.repeat(32)}`, status: 'failed', q: 'evt_nul' };

interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  items?: Schema;
  oneOf?: Schema[];
}
interface Parameter {
  $ref?: string;
  name: string;
  in: string;
  required?: boolean;
}
interface DescribedOperation {
  parameters?: Parameter[];
  requestBody?: { $ref?: string; content?: Record<string, { schema: Schema }> };
}

const follow = <T extends { $ref?: string }>(value: T): T => {
  if (!value.$ref) return value;
  const target = value.$ref
    .slice(2)
    .split('/')
    .reduce<unknown>((at, part) => (at as Record<string, unknown>)[part], openApi);
  return follow(target as T);
};
const isText = (schema: Schema) => schema.type === 'string' || (schema.enum?.every((v) => typeof v === 'string') ?? false);

/** Each text field of a body schema, as the body with a NUL in it and the field's name. */
function nulBodies(schema: Schema, valid: Record<string, unknown>): Array<{ body: Record<string, unknown>; field: string }> {
  const resolved = follow(schema);
  if (resolved.oneOf) return resolved.oneOf.flatMap((branch) => nulBodies(branch, valid));
  return Object.entries(resolved.properties ?? {}).flatMap(([name, property]) => {
    const field = follow(property);
    if (isText(field)) return [{ body: { ...valid, [name]: 'nul\u0000' }, field: name }];
    if (field.type === 'array' && field.items && isText(follow(field.items))) return [{ body: { ...valid, [name]: ['nul\u0000'] }, field: name }];
    return [];
  });
}

async function call(method: string, path: string, init: { body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(child.url + path, {
    method,
    headers: {
      authorization: `Bearer ${path.startsWith('/admin') ? ADMIN_TOKEN : API_TOKEN}`,
      'content-type': 'application/json',
      'idempotency-key': 'key-nul-at-the-edge',
      ...init.headers,
    },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, error: (JSON.parse(text) as { error?: string }).error ?? text };
}

test('a NUL in any path or query parameter, body field or Idempotency-Key of every operation is a 400 naming it', async () => {
  child = await file.start();
  const probed: string[] = [];
  for (const [template, operations] of Object.entries(openApi.paths)) {
    for (const [verb, described] of Object.entries(operations as Record<string, DescribedOperation>)) {
      const method = verb.toUpperCase();
      const operation = `${method} ${template}`;
      if (NOT_WALKED.has(operation)) continue;
      const parameters = (described.parameters ?? []).map(follow);
      const value = (name: string, nul: string | undefined) => (name === nul ? 'nul%00' : (VALID_PARAMETERS[name] ?? 'nul_ok'));
      const request = (nul?: string) => {
        const query = parameters
          .filter((p) => p.in === 'query' && (p.required || p.name === nul))
          .map((p) => `${p.name}=${value(p.name, nul)}`)
          .join('&');
        return template.replace(/\{(\w+)\}/g, (_, name: string) => value(name, nul)) + (query ? `?${query}` : '');
      };
      const valid = VALID_BODIES[operation];
      if (described.requestBody) assert.ok(valid, `${operation} takes a body: give a valid one in VALID_BODIES`);
      const bodySchema = described.requestBody && Object.values(follow(described.requestBody).content ?? {})[0]?.schema;
      const probes = [
        ...parameters.filter((p) => p.in === 'path' || p.in === 'query').map((p) => ({ where: p.name, path: request(p.name), body: valid })),
        ...(bodySchema && valid ? nulBodies(bodySchema, valid).map(({ body, field }) => ({ where: field, path: request(), body })) : []),
        ...(valid ? [{ where: '', path: request(), body: { ...valid, 'nul\u0000': 1 } }] : []),
      ];
      for (const probe of probes) {
        const reply = await call(method, probe.path, { body: probe.body });
        const what = `${operation} with a NUL in ${probe.where || 'a key of its body'}: ${JSON.stringify(probe.body)}`;
        assert.equal(reply.status, 400, `${what} answered ${reply.status} ${reply.error}`);
        if (probe.where) assert.match(reply.error, new RegExp(`^${probe.where}(\\.\\d+)?: `), what);
        probed.push(`${operation} ${probe.where}`);
      }
      if (parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key')) {
        // Not ASCII: fetch sends U+00E9 as the one byte 0xE9, which Node reads back as 'é'.
        const reply = await call(method, request(), { body: valid, headers: { 'idempotency-key': 'nul-caf\u00e9' } });
        assert.equal(reply.status, 400, `${operation} with a non-ASCII Idempotency-Key`);
        assert.match(reply.error, /Idempotency-Key/, operation);
        probed.push(`${operation} Idempotency-Key`);
      }
    }
  }
  assert.ok(probed.length >= 60, `only ${probed.length} probes: ${probed.join(', ')}`);
});

test('a NUL byte in a header never reaches a route: Node refuses the request with 400', async () => {
  const { hostname, port } = new URL(child.url);
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.end(
        `POST /api/accounts/acct_nul/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_TOKEN}\r\nIdempotency-Key: a\u0000b\r\nContent-Length: 0\r\n\r\n`,
      );
    });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
  });
  assert.match(answer, /^HTTP\/1\.1 400 /);
});

test('none of it was logged as an error', () => {
  const errors = child.logs.filter((line) => typeof line.level === 'number' && line.level >= 50);
  assert.deepEqual(errors, []);
});
