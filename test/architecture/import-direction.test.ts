// Imports go one way, through front doors. The core knows no business: nothing in src/ outside
// src/modules/, nor tasks/, imports a business module; only the entry points (src/main.ts,
// scripts/, tests, benchmarks) bring them in, through src/modules/index.ts. A module imports the
// core through src/business-module.ts only, and another module through that module's index.ts
// only: each is one face, so what a module may use is what those files export. Domain code speaks
// no HTTP: under src/modules/ only routes.ts files import Express or the front door's HTTP helpers
// (what it re-exports from src/http/), and the core's folders (events/, fulfilment/, maintenance/, db/,
// ...) never import src/http/; the wiring at the top of src/ (service.ts, shutdown.ts) may.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

// `import … from 'x'` and `export … from 'x'`, over several lines too.
const STATIC_IMPORT = /^(?:import|export)\s([^;]*?)from\s+'([^']+)'/gms;
const ENTRY_POINTS = ['src/main.ts'];
const MODULES = 'src/modules/';
/** The modules' list: wiring, like an entry point, so it may read config.ts and migrate.ts. */
const MODULE_LIST = 'src/modules/index.ts';
const FRONT_DOOR = 'src/business-module.ts';
const HTTP = 'src/http/';

/** One import: who, what (a path from the root, or a package's name) and the names it takes. */
interface Import {
  from: string;
  to: string;
  names: readonly string[];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** `{ a, type B, c as d }` (and a default or namespace import) → ['a', 'B', 'c']. */
function namesOf(clause: string): string[] {
  const braces = /\{([^}]*)\}/.exec(clause)?.[1];
  const listed = (braces ?? '')
    .split(',')
    .map(
      (n) =>
        n
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)[0]!,
    )
    .filter((n) => n !== '');
  const outside = clause
    .replace(/\{[^}]*\}/, '')
    .replace(/^\s*type\s/, '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return [...listed, ...outside.map((n) => (n.startsWith('*') ? '*' : 'default'))];
}

/** The imports of one file's text; relative ones resolved to paths from the root. */
function importsIn(file: string, text: string): Import[] {
  return [...text.matchAll(STATIC_IMPORT)].map((m) => {
    const specifier = m[2]!;
    const to = specifier.startsWith('.')
      ? relative(process.cwd(), resolve(dirname(file), specifier.replace(/\.js$/, '.ts')))
          .split(sep)
          .join('/')
      : specifier;
    return { from: file.split(sep).join('/'), to, names: namesOf(m[1]!) };
  });
}

/** Every import of src/ and tasks/. */
const imports = (): Import[] => ['src', 'tasks'].flatMap(sourceFiles).flatMap((file) => importsIn(file, readFileSync(file, 'utf8')));

/** The names the front door hands on from src/http/: HTTP, whatever file a module takes them from. */
function httpNames(): Set<string> {
  return new Set(
    importsIn(FRONT_DOOR, readFileSync(FRONT_DOOR, 'utf8'))
      .filter((i) => i.to.startsWith(HTTP))
      .flatMap((i) => i.names),
  );
}

const moduleOf = (file: string) => (file.startsWith(MODULES) && file !== MODULE_LIST ? file.slice(MODULES.length).split('/')[0] : undefined);
const isCore = (file: string) => (file.startsWith('src/') || file.startsWith('tasks/')) && !file.startsWith(MODULES);

/** The imports that break the rules above, each as "importer → imported: why". */
function wrongDirection(edges: readonly Import[], http: ReadonlySet<string>): string[] {
  return edges.flatMap(({ from, to, names }) => {
    const fromModule = moduleOf(from);
    const toModule = moduleOf(to);
    if (to.startsWith(MODULES) && isCore(from) && !ENTRY_POINTS.includes(from)) return [`${from} → ${to}: the core imports a business module`];
    if (fromModule !== undefined && toModule !== undefined && toModule !== fromModule && to !== `${MODULES}${toModule}/index.ts`) {
      return [`${from} → ${to}: a module reaches into another past its index.ts`];
    }
    if (fromModule !== undefined && isCore(to) && to !== FRONT_DOOR) return [`${from} → ${to}: a module reaches into the core past ${FRONT_DOOR}`];
    if (fromModule !== undefined && !from.endsWith('/routes.ts')) {
      const spoken = to === 'express' ? ['express'] : to === FRONT_DOOR ? names.filter((name) => http.has(name)) : [];
      if (spoken.length > 0) return [`${from} → ${to} (${spoken.join(', ')}): domain code imports HTTP`];
    }
    const coreFolder = isCore(from) && from.startsWith('src/') && from.split('/').length > 2;
    if (to.startsWith(HTTP) && coreFolder && !from.startsWith(HTTP)) return [`${from} → ${to}: core domain code imports HTTP`];
    return [];
  });
}

test('imports go one way: entry points → modules → front door → core, and only HTTP code imports HTTP', () => {
  const edges = imports();
  assert.ok(
    edges.some(({ to }) => to.startsWith(MODULES)),
    'the business modules were found',
  );
  assert.ok(
    edges.some(({ from, to }) => from.startsWith(MODULES) && to === FRONT_DOOR),
    'the modules import the front door',
  );
  assert.ok(httpNames().has('createThenCall'), "the front door's HTTP names were read");
  assert.deepEqual(wrongDirection(edges, httpNames()), []);
});

test('the rule catches each kind of wrong import, and lets the right ones through', () => {
  const edge = (from: string, to: string, ...names: string[]): Import => ({ from, to, names });
  const http = new Set(['createThenCall', 'badRequest']);
  assert.deepEqual(
    wrongDirection(
      [
        edge('src/events/read-model.ts', 'src/modules/credits/orders.ts'),
        edge('tasks/process_stripe_event.ts', 'src/modules/index.ts'),
        edge('src/modules/billing/invoices.ts', 'src/modules/credits/orders.ts'),
        edge('src/modules/billing/invoices.ts', 'src/modules/ledger/account-credits.ts'),
        edge('src/modules/credits/checkout.ts', 'src/outcomes.ts', 'PermanentError'),
        edge('src/modules/ledger/settings.ts', 'src/config.ts', 'httpUrl'),
        edge('src/modules/credits/routes.ts', 'src/http/idempotent-request.ts', 'createThenCall'),
        edge('src/modules/billing/subscription-state.ts', 'tasks/process_stripe_event.ts'),
        edge('src/modules/credits/checkout.ts', 'src/business-module.ts', 'PermanentError', 'createThenCall'),
        edge('src/modules/credits/orders.ts', 'express', 'Router'),
        edge('src/fulfilment/dispatch.ts', 'src/http/app.ts'),
        // Allowed, every one:
        edge('src/main.ts', 'src/modules/index.ts'),
        edge('src/modules/index.ts', 'src/modules/credits/index.ts'),
        edge('src/modules/index.ts', 'src/config.ts'),
        edge('src/modules/billing/grants.ts', 'src/modules/ledger/index.ts'),
        edge('src/modules/credits/orders.ts', 'src/business-module.ts', 'PermanentError'),
        edge('src/modules/credits/orders.ts', 'src/modules/credits/tables.ts'),
        edge('src/modules/credits/orders.ts', 'zod', 'z'),
        edge('src/modules/credits/routes.ts', 'src/business-module.ts', 'createThenCall', 'badRequest'),
        edge('src/modules/credits/routes.ts', 'express', 'Router'),
        edge('src/service.ts', 'src/http/app.ts'),
        edge('src/http/admin-routes.ts', 'src/business-module.ts'),
      ],
      http,
    ),
    [
      'src/events/read-model.ts → src/modules/credits/orders.ts: the core imports a business module',
      'tasks/process_stripe_event.ts → src/modules/index.ts: the core imports a business module',
      'src/modules/billing/invoices.ts → src/modules/credits/orders.ts: a module reaches into another past its index.ts',
      'src/modules/billing/invoices.ts → src/modules/ledger/account-credits.ts: a module reaches into another past its index.ts',
      'src/modules/credits/checkout.ts → src/outcomes.ts: a module reaches into the core past src/business-module.ts',
      'src/modules/ledger/settings.ts → src/config.ts: a module reaches into the core past src/business-module.ts',
      'src/modules/credits/routes.ts → src/http/idempotent-request.ts: a module reaches into the core past src/business-module.ts',
      'src/modules/billing/subscription-state.ts → tasks/process_stripe_event.ts: a module reaches into the core past src/business-module.ts',
      'src/modules/credits/checkout.ts → src/business-module.ts (createThenCall): domain code imports HTTP',
      'src/modules/credits/orders.ts → express (express): domain code imports HTTP',
      'src/fulfilment/dispatch.ts → src/http/app.ts: core domain code imports HTTP',
    ],
  );
});

test('imports are read with the names they take, over several lines, types and renames included', () => {
  const text =
    "import {\n  objectOf,\n  type EventHandler,\n  quoted as q,\n} from '../../business-module.js';\nimport type { Router } from 'express';\nexport { accountId } from './account-id.js';\n";
  assert.deepEqual(importsIn('src/modules/ledger/index.ts', text), [
    { from: 'src/modules/ledger/index.ts', to: 'src/business-module.ts', names: ['objectOf', 'EventHandler', 'quoted'] },
    { from: 'src/modules/ledger/index.ts', to: 'express', names: ['Router'] },
    { from: 'src/modules/ledger/index.ts', to: 'src/modules/ledger/account-id.ts', names: ['accountId'] },
  ]);
});
