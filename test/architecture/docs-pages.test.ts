// The pages a new team reads before the code: the release they adopt (its licence, its version and
// the changelog entry that says what it holds), a README that is a front page rather than a manual,
// links between the pages that lead somewhere, and docs/configuration.md, which must list exactly
// the variables the service reads, as .env.example must (test/deploy/compose-file.test.ts). The
// pages a newcomer is sent to name what they promise: the layout every folder of src/, the
// compatibility page every ops command, some page every npm script, the notifications page every
// notification type.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SERVICE_ENV_VARIABLES } from '../../src/modules/index.js';

const read = (file: string) => readFileSync(file, 'utf8');
const PAGES = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page's text outside fenced code blocks, where a link is text, not a link. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```$/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

test('the release is MIT-licensed, and package.json’s version is CHANGELOG.md’s newest release', () => {
  const pkg = JSON.parse(read('package.json')) as { version: string; license?: string };
  assert.equal(pkg.license, 'MIT');
  assert.match(read('LICENSE'), /^MIT License\n\nCopyright \(c\) \d{4} the stripe-inbox authors\n/);
  // Keep a Changelog: `## [Unreleased]` on top, then `## [x.y.z] - yyyy-mm-dd`, newest first.
  const releases = [...read('CHANGELOG.md').matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)].map((m) => [m[1], m[2]]);
  assert.equal(releases[0]?.[0], 'Unreleased');
  assert.deepEqual(releases[1]?.[0], pkg.version, 'the version in package.json has its changelog entry, the newest release');
  assert.match(releases[1]?.[1] ?? '', /^\d{4}-\d{2}-\d{2}$/, 'a release is dated');
});

test('README is a front page: at most 150 lines, the sections a new team needs, and the test command CI runs', () => {
  const readme = read('README.md');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 150, `README.md has ${lines} lines: move reference into docs/`);
  const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  assert.deepEqual(sections, ['Quick start', 'How it works', 'Connect your app', 'Try it with Stripe test mode', 'Deploy', 'Docs']);
  assert.match(readme, /^npm install\nnpm start .*\nnpm test /m, 'the quick start opens with its three commands');
  assert.match(read('.ci/run'), /^TEST_POSTGRES=\w+ npm test$/m, 'CI runs the command the quick start gives');
  assert.match(readme, /stripe listen --forward-to localhost:3000\/webhooks\/stripe/);
  // Every page of docs/ is on the map.
  const mapped = new Set([...readme.matchAll(/\]\((docs\/[\w-]+\.md)\)/g)].map((m) => m[1]));
  assert.deepEqual(
    PAGES.filter((page) => page.startsWith('docs/') && !mapped.has(page)),
    [],
    'pages of docs/ missing from README’s map',
  );
});

test('every relative link between the pages names a file that exists, and an anchor its headings make', () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    for (const [, target] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?|mailto):/.test(target!)) continue;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
      if (!existsSync(resolved)) broken.push(`${page}: ${target} (no ${resolved})`);
      else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(read(resolved)).has(anchor))
        broken.push(`${page}: ${target} (no heading makes #${anchor})`);
    }
  }
  assert.deepEqual(broken, []);
});

test('docs/configuration.md lists every variable the service reads, once, and nothing else', () => {
  const table = read('docs/configuration.md')
    .split('\n')
    .filter((line) => /^\| `[A-Z_]+`/.test(line));
  const listed = table.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!));
  assert.equal(new Set(listed).size, listed.length, 'a variable is listed twice');
  assert.deepEqual(
    SERVICE_ENV_VARIABLES.filter((name) => !listed.includes(name)),
    [],
    'read by the service, missing from docs/configuration.md',
  );
  assert.deepEqual(
    listed.filter((name) => !SERVICE_ENV_VARIABLES.includes(name)),
    [],
    'in docs/configuration.md but read by nothing',
  );
});

test('docs/development.md’s layout names every folder and file of src/ and every business module', () => {
  const layout = /^## Layout\n+```\n([\s\S]*?)^```$/m.exec(read('docs/development.md'))?.[1] ?? '';
  const entries = [
    ...readdirSync('src', { withFileTypes: true }).map((e) => (e.isDirectory() ? `src/${e.name}/` : `src/${e.name}`)),
    ...readdirSync('src/modules', { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `src/modules/${e.name}/`),
    ...readdirSync('sql', { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `sql/${e.name}/`),
  ];
  assert.deepEqual(
    entries.filter((entry) => !layout.includes(entry)),
    [],
    'missing from the layout',
  );
});

test('every command, npm script and notification type is named on the page that promises it', () => {
  const compatibility = read('docs/compatibility.md');
  const commands = readdirSync('scripts')
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.replace(/\.ts$/, ''));
  assert.deepEqual(
    commands.filter((name) => !compatibility.includes(`\`${name}\``) && !compatibility.includes(`npm run ${name}\``)),
    [],
    'ops commands (scripts/*.ts) missing from docs/compatibility.md',
  );
  const documented = ['README.md', 'docs/development.md', 'docs/operations.md'].map(read).join('\n');
  const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
  assert.deepEqual(
    scripts.filter((name) => !new RegExp(`\\bnpm (?:run )?${name.replace(':', '\\:')}\\b`).test(documented)),
    [],
    'npm scripts that README.md, docs/development.md and docs/operations.md never name',
  );
  const notifications = read('docs/notifications.md');
  const types = Object.keys((JSON.parse(read('docs/openapi.json')) as { webhooks: Record<string, unknown> }).webhooks);
  assert.deepEqual(
    types.filter((type) => !notifications.includes(`\`${type}\``)),
    [],
    'notification types missing from docs/notifications.md',
  );
});
