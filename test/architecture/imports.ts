// The imports of this tree's TypeScript files, read as text for the tests of its structure: one
// reader, so that every rule about who may import whom sees the same imports.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export interface Import {
  /** As written; undefined for a dynamic import() of something other than a string literal. */
  specifier: string | undefined;
  /** `import type …` or `export type … from`: erased at compile time, so nothing is loaded. */
  typeOnly: boolean;
  dynamic: boolean;
}

// `import … from './x.js'` and `export … from './x.js'`, over several lines too.
const STATIC = /^(?:import|export)\s([^;]*?)from\s+['"]([^'"]+)['"]/gms;
// `import './x.js'`, for its side effects.
const BARE = /^import\s+['"]([^'"]+)['"]/gm;
// `import('./x.js')`, and an import() of anything else, which no rule can check.
const DYNAMIC = /\bimport\(\s*(?:['"]([^'"]+)['"]\s*\))?/g;

/**
 * Every import of `source`: static, side-effect and dynamic. `import { type A }` is not type-only:
 * under verbatimModuleSyntax it still loads the module.
 */
export function importsOf(source: string): Import[] {
  return [
    ...[...source.matchAll(STATIC)].map((m) => ({ specifier: m[2], typeOnly: /^type\s/.test(m[1]!), dynamic: false })),
    ...[...source.matchAll(BARE)].map((m) => ({ specifier: m[1], typeOnly: false, dynamic: false })),
    ...[...source.matchAll(DYNAMIC)].map((m) => ({ specifier: m[1], typeOnly: false, dynamic: true })),
  ];
}

/** The file a relative specifier names, as a path from the repository's root ('src/db/pools.ts'); undefined for a package or a builtin. */
export function resolveImport(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  return relative(process.cwd(), resolve(dirname(file), specifier.replace(/\.js$/, '.ts')))
    .split(sep)
    .join('/');
}

/** The files of this tree that `file` imports, as paths from the repository's root. */
export function importedFiles(file: string, source: string): string[] {
  return importsOf(source).flatMap(({ specifier }) => {
    const target = specifier === undefined ? undefined : resolveImport(file, specifier);
    return target === undefined ? [] : [target];
  });
}

/** The .ts files under `dir`, as paths from the repository's root. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path.split(sep).join('/')] : [];
  });
}

/** Each file under `dirs` with its text. */
export function readSources(dirs: readonly string[]): Array<{ file: string; source: string }> {
  return dirs.flatMap(sourceFiles).map((file) => ({ file, source: readFileSync(file, 'utf8') }));
}
