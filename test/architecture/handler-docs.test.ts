// docs/handlers.md's examples compile against the front door. Each ```ts block of the page is a
// whole file whose first line names where it would live (`// src/modules/credits/customer-deleted.ts`);
// the blocks are type-checked together, as those files, over the real tree and with the project's
// compiler options, so a name the front door stops exporting, or a signature that changes, fails
// here and not in the next reader's editor. A block under src/modules/ reaches the core the way a
// module must: through src/business-module.ts only.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const DOC = 'docs/handlers.md';
const PATH_LINE = /^\/\/ ((?:src|test)\/[\w/.-]+\.ts)\b/;

interface Block {
  file: string;
  text: string;
  /** Line of the doc where the block starts, for messages. */
  line: number;
}

function blocksOf(markdown: string): Block[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => {
    const text = m[1]!;
    const line = markdown.slice(0, m.index).split('\n').length;
    const file = PATH_LINE.exec(text)?.[1];
    assert.ok(file, `${DOC}:${line}: a ts block starts with the path it would live at (// src/modules/…/….ts)`);
    return { file, text, line };
  });
}

let previous: ts.Program | undefined;

/** Type-checks the blocks as files at their paths, beside the real tree; returns each error as "doc line: file:line: message". */
function typeErrors(blocks: readonly Block[]): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(path.resolve('tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  assert.ok(config, 'tsconfig.json was read');
  const virtual = new Map(blocks.map((block) => [path.resolve(block.file), block]));
  const host = ts.createCompilerHost(config.options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (name) => virtual.get(path.resolve(name))?.text ?? readFile(name);
  host.fileExists = (name) => virtual.has(path.resolve(name)) || fileExists(name);
  // A new module's folder exists only in the doc: module resolution asks for it first.
  const directoryExists = host.directoryExists?.bind(host) ?? ((name: string) => ts.sys.directoryExists(name));
  const folders = new Set([...virtual.keys()].map((file) => path.dirname(file)));
  host.directoryExists = (name) => folders.has(path.resolve(name)) || directoryExists(name);
  host.getSourceFile = (name, language, ...rest) => {
    const block = virtual.get(path.resolve(name));
    return block ? ts.createSourceFile(name, block.text, language) : getSourceFile(name, language, ...rest);
  };
  // The tree's files are the same in every check: the program before lends them to the next.
  const program = ts.createProgram({ rootNames: [...virtual.keys()], options: { ...config.options, noEmit: true }, host, oldProgram: previous });
  previous = program;
  const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
  for (const file of virtual.keys()) {
    const source = program.getSourceFile(file);
    if (source) diagnostics.push(...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source));
  }
  return diagnostics.map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (!d.file || d.start === undefined) return message;
    const block = virtual.get(path.resolve(d.file.fileName));
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${DOC}:${block ? block.line + line + 1 : '?'} (${path.relative(process.cwd(), d.file.fileName)}:${line + 1}): ${message}`;
  });
}

/** The imports of a block under src/modules/ that reach the core past the front door. */
function pastTheFrontDoor(block: Block): string[] {
  if (!block.file.startsWith('src/modules/')) return [];
  return [...block.text.matchAll(/from '(\.\.\/\.\.\/[^']+)'/g)]
    .map((m) => m[1]!)
    .filter((specifier) => specifier !== '../../business-module.js')
    .map((specifier) => `${DOC}:${block.line} (${block.file}): imports ${specifier}`);
}

const blocks = blocksOf(readFileSync(DOC, 'utf8'));

test(`${DOC}'s examples are whole files at new paths, importing the core through the front door only`, () => {
  assert.ok(blocks.length >= 4, `the examples were found (${blocks.length})`);
  assert.equal(new Set(blocks.map((b) => b.file)).size, blocks.length, 'two blocks name one file');
  // A block at a real file's path would hide that file from the check, and the file from the block.
  assert.deepEqual(
    blocks.filter((b) => existsSync(b.file)).map((b) => b.file),
    [],
  );
  assert.deepEqual(blocks.flatMap(pastTheFrontDoor), []);
});

test(`${DOC}'s examples type-check against the tree`, () => {
  assert.deepEqual(typeErrors(blocks), []);
});

test('the check is real: a wrong name, a wrong type or a core import past the front door fails it', () => {
  const handler = (body: string, from = '../../business-module.js'): Block => ({
    file: 'src/modules/credits/doc-probe.ts',
    line: 1,
    text: `// src/modules/credits/doc-probe.ts\nimport { ${body} } from '${from}';\n`,
  });
  assert.match(typeErrors([handler('notExported')]).join('\n'), /has no exported member 'notExported'/);
  const wrongOutcome: Block = {
    ...handler('type EventHandler'),
    text: `${handler('type EventHandler').text}export const h: EventHandler = async () => ({ status: 'done' });\n`,
  };
  assert.match(typeErrors([wrongOutcome]).join('\n'), /'\{ status: "done"; \}' is not assignable to type 'FinishOutcome'/);
  assert.deepEqual(pastTheFrontDoor(handler('objectOf', '../../stripe/stripe-objects.js')), [
    `${DOC}:1 (src/modules/credits/doc-probe.ts): imports ../../stripe/stripe-objects.js`,
  ]);
});
