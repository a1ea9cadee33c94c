// The core knows no business: nothing in src/ outside src/modules/, nor tasks/, imports a business
// module; only the entry points (src/main.ts, scripts/, tests, benchmarks) bring them in, through
// src/modules/index.ts. A module uses another only through that module's index.ts, its public
// face. Domain code speaks no HTTP: under src/modules/ only routes.ts files import src/http/, and
// the core's folders (events/, fulfilment/, sweep/, db/, ...) never do; the wiring at the top of
// src/ (service.ts, shutdown.ts) may.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

const RELATIVE_IMPORT = /^(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms;
const ENTRY_POINTS = ['src/main.ts'];
const MODULES = 'src/modules/';
const HTTP = 'src/http/';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import of src/ and tasks/, as [importer, imported], paths relative to the root. */
function imports(): Array<[string, string]> {
  return ['src', 'tasks'].flatMap(sourceFiles).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)].map((m): [string, string] => [
      file.split(sep).join('/'),
      relative(process.cwd(), resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts'))).split(sep).join('/'),
    ]),
  );
}

const moduleOf = (file: string) => (file.startsWith(MODULES) ? file.slice(MODULES.length).split('/')[0] : undefined);

/** The imports that break the rules above, each as "importer → imported: why". */
function wrongDirection(edges: ReadonlyArray<[string, string]>): string[] {
  return edges.flatMap(([from, to]) => {
    const fromModule = moduleOf(from);
    const toModule = moduleOf(to);
    if (toModule !== undefined && fromModule === undefined && !ENTRY_POINTS.includes(from)) return [`${from} → ${to}: the core imports a business module`];
    if (toModule !== undefined && fromModule !== undefined && toModule !== fromModule && fromModule !== 'index.ts' && to !== `${MODULES}${toModule}/index.ts`) {
      return [`${from} → ${to}: a module reaches into another past its index.ts`];
    }
    if (to.startsWith(HTTP) && fromModule !== undefined && !from.endsWith('/routes.ts')) return [`${from} → ${to}: domain code imports HTTP`];
    const coreFolder = fromModule === undefined && from.startsWith('src/') && from.split('/').length > 2;
    if (to.startsWith(HTTP) && coreFolder && !from.startsWith(HTTP)) {
      return [`${from} → ${to}: core domain code imports HTTP`];
    }
    return [];
  });
}

test('imports go one way: entry points → modules → core, and only HTTP code imports src/http/', () => {
  const edges = imports();
  assert.ok(edges.some(([, to]) => to.startsWith(MODULES)), 'the business modules were found');
  assert.deepEqual(wrongDirection(edges), []);
});

test('the rule catches each kind of wrong import', () => {
  assert.deepEqual(
    wrongDirection([
      ['src/events/read-model.ts', 'src/modules/credits/orders.ts'],
      ['src/modules/billing/invoices.ts', 'src/modules/credits/orders.ts'],
      ['src/modules/credits/checkout.ts', 'src/http/idempotent-request.ts'],
      ['src/fulfilment/dispatch.ts', 'src/http/app.ts'],
      ['src/main.ts', 'src/modules/index.ts'],
      ['src/modules/credits/routes.ts', 'src/http/validation.ts'],
      ['src/modules/index.ts', 'src/modules/credits/index.ts'],
      ['src/modules/billing/grants.ts', 'src/modules/credits/index.ts'],
      ['src/service.ts', 'src/http/app.ts'],
    ]),
    [
      'src/events/read-model.ts → src/modules/credits/orders.ts: the core imports a business module',
      'src/modules/billing/invoices.ts → src/modules/credits/orders.ts: a module reaches into another past its index.ts',
      'src/modules/credits/checkout.ts → src/http/idempotent-request.ts: domain code imports HTTP',
      'src/fulfilment/dispatch.ts → src/http/app.ts: core domain code imports HTTP',
    ],
  );
});
