// Citations of docs/design.md lead somewhere. Comments and docs say why with `docs/design.md,
// invariant 7` (or `invariants 2 and 6`, `invariants 1, 3-7 and 10`) and `docs/design.md, "The
// event lifecycle"`: each must name an invariant the page numbers or a heading it has, so that a
// renumbered or renamed promise fails here, not in a reader's search; a link into the page from
// another doc must name one of its headings. The repository stands on its own: nothing cites a
// design document kept outside it (the shared contract, `DESIGN`), except the migrations applied
// before the page existed, which cannot change (their checksum would stop start-up): their
// `DESIGN invariant N` is read as the page's invariant N, which must exist. And the page holds
// itself to what it says: every invariant names the tests that hold it, every file it names
// exists, every link it makes leads to a page and heading that exist.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';

const PAGE = 'docs/design.md';
const THIS_FILE = 'test/architecture/design-citations.test.ts';
/** Where citations live: the code, its SQL, tests, docs and the deployment files. */
const ROOTS = ['src', 'tasks', 'scripts', 'sql', 'test', 'docs', 'bench', '.ci', 'Dockerfile', 'docker-compose.yml', 'README.md', '.env.example'];
/** Applied before the page existed, checksummed, so frozen: they cite it as `DESIGN invariant N`. */
const FROZEN_MIGRATIONS = new Set(['sql/0001_inbox_and_ledger.sql', 'sql/0024_snapshot_claims.sql']);

interface Page {
  invariants: Map<number, string>;
  headings: Set<string>;
  anchors: Set<string>;
}

/** A heading's text as GitHub shows it, and the anchor GitHub gives it. */
const headingText = (raw: string) => raw.replaceAll('`', '').trim();
const anchorOf = (raw: string) =>
  headingText(raw)
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

function headingsOf(markdown: string): string[] {
  return [...markdown.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!);
}

function pageOf(markdown: string): Page {
  const invariants = new Map([...markdown.matchAll(/^### (\d+)\. (.+)$/gm)].map((m) => [Number(m[1]), m[2]!] as const));
  const headings = headingsOf(markdown);
  return { invariants, headings: new Set(headings.map(headingText)), anchors: new Set(headings.map(anchorOf)) };
}

function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => (name === 'node_modules' ? [] : filesUnder(join(path, name))));
}

/** "1, 3-7 and 10" → [1, 3, 4, 5, 6, 7, 10] */
function numbersOf(list: string): number[] {
  return list.split(/,\s*|\s+and\s+/).flatMap((part) => {
    const [from, to = from] = part.split(/\s*[-–]\s*/).map(Number);
    return Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
  });
}

/**
 * What `text` (the file `file`) cites that the page does not have, and every citation of a design
 * document outside the repository, each as "file: citation: why". A comment's line breaks and
 * markers (`//`, `--`, `*`, `#`) are read as spaces, so a citation wrapped over two lines counts.
 */
function brokenCitations(file: string, text: string, page: Page): string[] {
  const frozen = FROZEN_MIGRATIONS.has(file);
  const flat = (frozen ? text.replaceAll('DESIGN invariant', 'docs/design.md, invariant') : text).replace(/\n[ \t]*(?:\/\/|--|\*|#)?[ \t]*/g, ' ');
  const problems: string[] = [];
  for (const m of flat.matchAll(/docs\/design\.md,\s+invariants?\s+(\d+(?:\s*[-–]\s*\d+)?(?:(?:,\s*|,?\s+and\s+)\d+(?:\s*[-–]\s*\d+)?)*)/g)) {
    const missing = numbersOf(m[1]!).filter((n) => !page.invariants.has(n));
    if (missing.length > 0) problems.push(`${file}: "${m[0]}": ${PAGE} has no invariant ${missing.join(', ')}`);
  }
  for (const m of flat.matchAll(/docs\/design\.md,\s+"([^"]+)"/g)) {
    if (!page.headings.has(m[1]!)) problems.push(`${file}: "${m[0]}": ${PAGE} has no heading "${m[1]}"`);
  }
  for (const m of flat.matchAll(/\]\((?:\.\/)?(?:docs\/)?design\.md#([^)\s]+)\)/g)) {
    if (!page.anchors.has(m[1]!)) problems.push(`${file}: "${m[0]}": ${PAGE} has no heading with the anchor #${m[1]}`);
  }
  // An invariant named without the page ("(invariant 4)") is a citation no check resolves: a
  // renumbering would leave it pointing at another promise.
  for (const m of file === PAGE ? [] : flat.matchAll(/(?<!design\.md,\s+|\[|\bDESIGN\s+)\binvariants?\s+\d+/g)) {
    problems.push(`${file}: "${m[0]}": cite it as "${PAGE}, ${m[0]}"`);
  }
  // The page itself names the migrations' old citation, to say what it means.
  for (const m of file === PAGE ? [] : flat.matchAll(/.{0,40}(?:\bDESIGN\b|\/work\/shared\/).{0,40}/g)) {
    problems.push(`${file}: "${m[0].trim()}": cites a design document outside the repository; cite ${PAGE} instead`);
  }
  return problems;
}

/** The page's own promises: numbered invariants, each with its tests; files and links that exist. */
function pageProblems(markdown: string, exists: (path: string) => boolean, headingsIn: (doc: string) => string[]): string[] {
  const problems: string[] = [];
  const sections = markdown.split(/^(?=### \d+\. )/m).filter((chunk) => /^### \d+\. /.test(chunk));
  sections.forEach((section, i) => {
    const [, number, title] = /^### (\d+)\. (.+)$/m.exec(section)!;
    if (Number(number) !== i + 1) problems.push(`invariant "${number}. ${title}" is numbered out of turn (expected ${i + 1})`);
    const heldBy = /^Held by: ([\s\S]*?)(?:\n\n|(?![\s\S]))/m.exec(section)?.[1] ?? '';
    if (!/test\/[\w/.-]+\.ts/.test(heldBy)) problems.push(`invariant ${number} names no test that holds it ("Held by: test/….ts")`);
  });
  for (const [path] of markdown.matchAll(/\b(?:test|src)\/[\w/.-]+\.ts\b/g)) {
    if (!exists(path)) problems.push(`names ${path}, which does not exist`);
  }
  for (const [, target, anchor] of markdown.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
    if (/^[a-z]+:/.test(target!)) continue;
    const doc = target === '' ? PAGE : join(dirname(PAGE), target!);
    if (!exists(doc)) problems.push(`links to ${doc}, which does not exist`);
    else if (anchor !== undefined && !headingsIn(doc).map(anchorOf).includes(anchor)) problems.push(`links to ${doc}#${anchor}, a heading it does not have`);
  }
  return problems;
}

const markdown = readFileSync(PAGE, 'utf8');
const page = pageOf(markdown);

test(`every citation of ${PAGE} names an invariant or heading it has, and none cites a document outside the repository`, () => {
  const files = ROOTS.flatMap(filesUnder).filter((file) => relative('.', file) !== THIS_FILE);
  assert.ok(files.length > 100, `the tree was read (${files.length} files)`);
  const texts = files.map((file) => ({ file, text: readFileSync(file, 'utf8') })).filter(({ text }) => !text.includes('\0'));
  assert.deepEqual(
    texts.flatMap(({ file, text }) => brokenCitations(file, text, page)),
    [],
  );
  const cited = texts.filter(({ text }) => /docs\/design\.md,\s+invariant/.test(text));
  assert.ok(cited.length >= 20, `the code cites the page's invariants (${cited.length} files)`);
});

test(`${PAGE} numbers its invariants, names the tests that hold each, and links only to what exists`, () => {
  assert.deepEqual([...page.invariants.keys()], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.deepEqual(
    pageProblems(markdown, existsSync, (doc) => headingsOf(readFileSync(doc, 'utf8'))),
    [],
  );
});

test('the checks are real: a missing invariant or heading, an outside citation, a missing test or anchor fail', () => {
  const probe = pageOf('### 1. One\n\nHeld by: test/x.test.ts.\n\n### 2. Two\n\n## The event lifecycle\n');
  assert.deepEqual(brokenCitations('a.ts', '// see docs/design.md, invariants 1 and 2; docs/design.md, "The event lifecycle"', probe), []);
  assert.deepEqual(brokenCitations('a.ts', '// the sweep (docs/design.md, invariants 1,\n// 2-3)', probe), [
    'a.ts: "docs/design.md, invariants 1, 2-3": docs/design.md has no invariant 3',
  ]);
  assert.deepEqual(brokenCitations('a.sql', '-- docs/design.md, "Lifecycle"', probe), [
    'a.sql: "docs/design.md, "Lifecycle"": docs/design.md has no heading "Lifecycle"',
  ]);
  assert.equal(brokenCitations('a.ts', '// (DESIGN invariant 7)', probe).length, 1);
  assert.deepEqual(brokenCitations('a.ts', '// a second Event object (invariant 2)', probe), ['a.ts: "invariant 2": cite it as "docs/design.md, invariant 2"']);
  assert.deepEqual(brokenCitations('sql/0001_inbox_and_ledger.sql', '-- (DESIGN invariant 2)', probe), []);
  assert.deepEqual(brokenCitations('sql/0001_inbox_and_ledger.sql', '-- (DESIGN invariant 7)', probe), [
    'sql/0001_inbox_and_ledger.sql: "docs/design.md, invariant 7": docs/design.md has no invariant 7',
  ]);
  assert.deepEqual(brokenCitations('docs/x.md', '[invariant 2](design.md#2-two) [a](design.md#the-event-lifecycle) [b](design.md#two)', probe), [
    'docs/x.md: "](design.md#two)": docs/design.md has no heading with the anchor #two',
  ]);
  const exists = (path: string) => path === 'test/x.test.ts' || path === 'docs/events.md' || path === PAGE;
  assert.deepEqual(
    pageProblems(
      '### 1. One\n\nHeld by: test/x.test.ts.\n\n### 3. Three\n\nHeld by: test/y.test.ts.\n\n[a](events.md#ours-or-not) [b](#one)\n',
      exists,
      (doc) => (doc === PAGE ? ['1. One'] : ['Ours or not']),
    ),
    [
      'invariant "3. Three" is numbered out of turn (expected 2)',
      'names test/y.test.ts, which does not exist',
      `links to ${PAGE}#one, a heading it does not have`,
    ],
  );
  assert.equal(anchorOf('What "once" means'), 'what-once-means');
  assert.equal(anchorOf('What `npm run test:ha` measured'), 'what-npm-run-testha-measured');
});
