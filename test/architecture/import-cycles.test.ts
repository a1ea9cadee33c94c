// No module of src/, tasks/ or scripts/ reaches itself through its imports, type, side-effect
// and dynamic imports included: a cycle means two concerns that cannot be read, or replaced, one
// without the other.
import assert from 'node:assert/strict';
import { relative, resolve } from 'node:path';
import { test } from 'node:test';
import { importedFiles, readSources } from './imports.js';

const ROOTS = ['src', 'tasks', 'scripts'];

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const { file, source } of readSources(ROOTS))
    graph.set(
      resolve(file),
      importedFiles(file, source).map((target) => resolve(target)),
    );
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'visiting');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'visiting') found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found.map((cycle) => cycle.map((file) => relative(process.cwd(), file)));
}

test('the modules of src/, tasks/ and scripts/ import each other without cycles', () => {
  const graph = importGraph();
  assert.ok(graph.size > 50, 'the import graph was read');
  assert.deepEqual(
    cycles(graph).map((cycle) => cycle.join(' → ')),
    [],
  );
});

test('the cycle finder finds a cycle', () => {
  assert.deepEqual(
    cycles(
      new Map([
        [resolve('a.ts'), [resolve('b.ts')]],
        [resolve('b.ts'), [resolve('a.ts')]],
      ]),
    ),
    [['a.ts', 'b.ts', 'a.ts']],
  );
});
