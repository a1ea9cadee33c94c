// docs/openapi.json against the routes the service really mounts, and served as it is.
//
// 1. Routes: the Express app's router stack is walked (every router, at its mount path), and each
//    route under /api and /admin/api must be described, method and path; each described operation
//    must be a route the app has (the ops routes too: /webhooks/stripe, /healthz, …).
// 2. Statuses, for each operation under /api and /admin/api, both ways: the statuses it describes
//    are those its code can give, and it describes every one its code gives. What its code gives
//    is read from the source: the status literals (`res.status(404)`, `status: 409`) in its route
//    handler and, transitively, in the functions and constants of the HTTP layer (src/http/,
//    src/business-module.ts and the modules' routes.ts, where every status is decided: "each domain
//    outcome mapped to its answer here and nowhere else") that it names; 200 where it answers with
//    res.json or res.type(…).send without a status. Beside those, each operation may describe
//    what the middleware in front of every route gives: 401 (the token guard), 429 (the rate
//    limit) and 503 (the database unreachable or the pool busy: the error handler), and 400 when
//    its path has a parameter (router.param checks it). The other errors of the middleware (413,
//    415, 403, a body that is not JSON, 500) are its `default` response.
// 3. Every answer the test suite's helpers receive, and every notification the test receiver
//    verifies, is validated against the document by test/support/openapi.ts; here, the
//    notification types the modules send are exactly the document's `webhooks`, and every schema
//    of it compiles.
// The counts go to the test's diagnostics; OPENAPI_TALLY_FILE=path npm test -- … collects the
// responses and notifications validated by every file of a run.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { buildApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { businessModules } from '../../src/modules/index.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { StripeCalls } from '../../src/stripe/stripe-calls.js';
import { compileComponents, openApi } from '../support/openapi.js';
import { serviceForFile, STRIPE_SECRET_KEY } from '../support/service.js';

const file = serviceForFile();

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean>; stack: Layer[] };
  handle: { stack?: Layer[]; toString(): string };
  rawPath?: string | string[];
}

interface MountedRoute {
  method: string;
  /** As the document writes it: /api/orders/{id}. */
  path: string;
  handlers: string[];
}

/** Every route of a router and of the routers mounted in it, with its full path. */
function mountedRoutes(stack: readonly Layer[], prefix = ''): MountedRoute[] {
  return stack.flatMap((layer): MountedRoute[] => {
    if (layer.route) {
      const { route } = layer;
      return [route.path].flat().flatMap((path) =>
        Object.keys(route.methods)
          .filter((method) => method !== '_all')
          .map((method) => ({ method, path: `${prefix}${path}`.replace(/:(\w+)/g, '{$1}'), handlers: route.stack.map((l) => l.handle.toString()) })),
      );
    }
    if (!layer.handle.stack) return [];
    const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
    return mountedRoutes(layer.handle.stack, prefix + mount);
  });
}

/** The routes of the app as the service builds it (src/service.ts), on the test service's pools. */
function appRoutes(): MountedRoute[] {
  const { config, pools, readiness, stripe } = file.service;
  const logger = createLogger('silent');
  const metrics = new Metrics(pools.api.db);
  const stripeCalls = new StripeCalls(createStripeClient(STRIPE_SECRET_KEY, stripe.url, { timeoutMs: config.stripeTimeoutMs }), {
    maxConcurrent: 1,
    timeoutMs: config.stripeTimeoutMs,
    metrics,
    logger,
  });
  const claim = () => Promise.reject(new Error('the routes are only listed here'));
  const app = buildApp({ config, db: pools.api.db, claim, stripeCalls, modules: businessModules, readiness, logger, metrics }) as unknown as {
    router: { stack: Layer[] };
  };
  return mountedRoutes(app.router.stack);
}

const isApi = (path: string) => path.startsWith('/api/') || path.startsWith('/admin/api/');
const describedOperations = () =>
  Object.entries(openApi.paths).flatMap(([path, operations]) => Object.entries(operations).map(([method, operation]) => ({ method, path, operation })));

test('every route under /api and /admin/api is described, and every described operation is a route', (t) => {
  const routes = appRoutes();
  const mounted = new Set(routes.map((r) => `${r.method} ${r.path}`));
  const described = new Set(describedOperations().map((o) => `${o.method} ${o.path}`));
  const undescribed = routes.filter((r) => isApi(r.path) && !described.has(`${r.method} ${r.path}`)).map((r) => `${r.method} ${r.path}`);
  assert.deepEqual(undescribed, [], 'routes docs/openapi.json does not describe');
  assert.deepEqual(
    [...described].filter((o) => !mounted.has(o)),
    [],
    'described operations the app has no route for',
  );
  const api = routes.filter((r) => isApi(r.path)).length;
  t.diagnostic(`${api} routes under /api and /admin/api, ${described.size} operations described (${described.size - api} ops routes)`);
});

// The HTTP layer's top-level functions and constants, by name: where statuses are decided.
const HTTP_LAYER = [
  ...readdirSync('src/http')
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join('src/http', f)),
  'src/business-module.ts',
  ...readdirSync('src/modules')
    .map((m) => join('src/modules', m, 'routes.ts'))
    .filter((f) => existsSync(f)),
];

/**
 * The functions of `files` by name, at any depth (a route builder's own helper, such as the
 * ledger's writeOnce), and their top-level constants (an answer kept whole, such as IN_FLIGHT).
 */
function declarationsOf(files: readonly string[]): Map<string, string[]> {
  const declarations = new Map<string, string[]>();
  const add = (name: string, node: ts.Node, source: ts.SourceFile) => declarations.set(name, [...(declarations.get(name) ?? []), node.getText(source)]);
  for (const path of files) {
    const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionDeclaration(node) && node.name) add(node.name.text, node, source);
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
        const isFunction = ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer);
        if (isFunction || ts.isSourceFile(node.parent.parent.parent)) add(node.name.text, node, source);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return declarations;
}

const STATUS_LITERAL = /\bstatus(?:\(\s*|\s*:\s*)([1-5]\d\d)\b/g;
const ANSWERS_200 = /\bres\.json\(|\bres\.type\([^)]*\)\.send\(/;

/** The statuses `code` gives, its own and those of the HTTP layer's declarations it names, transitively. */
function statusesOf(code: readonly string[], declarations: Map<string, string[]>): Set<number> {
  const statuses = new Set<number>();
  const seen = new Set<string>();
  const pending = [...code];
  while (pending.length > 0) {
    const text = pending.pop()!;
    for (const m of text.matchAll(STATUS_LITERAL)) statuses.add(Number(m[1]));
    if (ANSWERS_200.test(text)) statuses.add(200);
    for (const [name] of text.matchAll(/\b[A-Za-z_$][\w$]*\b/g)) {
      if (seen.has(name) || !declarations.has(name)) continue;
      seen.add(name);
      pending.push(...declarations.get(name)!);
    }
  }
  return statuses;
}

/** What the middleware in front of every /api and /admin/api route may answer (see the header). */
const middlewareStatuses = (path: string) => new Set([401, 429, 503, ...(path.includes('{') ? [400] : [])]);

test("every operation under /api and /admin/api describes exactly the statuses its code gives, besides the middleware's", (t) => {
  const declarations = declarationsOf(HTTP_LAYER);
  const routes = new Map(appRoutes().map((r) => [`${r.method} ${r.path}`, r]));
  const problems: string[] = [];
  let checked = 0;
  for (const { method, path, operation } of describedOperations().filter((o) => isApi(o.path))) {
    const name = `${method.toUpperCase()} ${path}`;
    const code = statusesOf(routes.get(`${method} ${path}`)?.handlers ?? [], declarations);
    const shared = middlewareStatuses(path);
    const described = Object.keys(operation.responses)
      .filter((s) => s !== 'default')
      .map(Number);
    for (const status of described)
      if (!code.has(status) && !shared.has(status)) problems.push(`${name} describes ${status}, which neither its code nor the middleware gives`);
    for (const status of code) if (!described.includes(status)) problems.push(`${name} can answer ${status}, which it does not describe`);
    assert.ok(operation.responses.default, `${name} describes the middleware's other errors as its default`);
    checked += described.length;
  }
  assert.deepEqual(problems, []);
  t.diagnostic(`${checked} described statuses checked against the code`);
});

test("the notification types the modules send are the document's webhooks, and every schema compiles", (t) => {
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [readFileSync(join(dir, e.name), 'utf8')] : [],
    );
  // `type: 'order.paid'` in a notifyAccounts call; the dispute types by their role (ledger/disputes.ts).
  const sent = new Set(
    sources('src/modules').flatMap((text) =>
      [...text.matchAll(/\b(?:type|disputed|reinstated):\s*'((?:order|subscription|account)\.[a-z_]+)'/g)].map((m) => m[1]!),
    ),
  );
  assert.deepEqual(Object.keys(openApi.webhooks).sort(), [...sent].sort());
  t.diagnostic(`${sent.size} notification types, ${compileComponents()} component schemas compiled`);
});

test('GET /openapi.json serves the document, without a token, cacheable, readable from any origin', async () => {
  const response = await fetch(`${file.service.url}/openapi.json`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(response.headers.get('cache-control'), 'public, max-age=300');
  assert.equal(response.headers.get('access-control-allow-origin'), '*');
  assert.deepEqual(await response.json(), openApi);
});

test("the document names this release's version", () => {
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  assert.equal(openApi.info.version, version, 'a release bumps info.version in docs/openapi.json with package.json');
});
