// No module of src/, tasks/ or scripts/ reaches itself through its imports, type imports
// included: a cycle means two concerns that cannot be read, or replaced, one without the other.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOTS = ['src', 'tasks', 'scripts'];
// `import … from './x.js'` and `export … from './x.js'`, over several lines too.
const RELATIVE_IMPORT = /^(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [resolve(path)] : [];
  });
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of ROOTS.flatMap(sourceFiles)) {
    const text = readFileSync(file, 'utf8');
    graph.set(file, [...text.matchAll(RELATIVE_IMPORT)].map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts'))));
  }
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
  assert.deepEqual(cycles(graph).map((cycle) => cycle.join(' → ')), []);
});

test('the cycle finder finds a cycle', () => {
  assert.deepEqual(cycles(new Map([[resolve('a.ts'), [resolve('b.ts')]], [resolve('b.ts'), [resolve('a.ts')]]])), [['a.ts', 'b.ts', 'a.ts']]);
});
