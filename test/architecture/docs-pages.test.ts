// The pages a new team reads before the code: the release they adopt (its licence, its version and
// the changelog entry that says what it holds).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const read = (file: string) => readFileSync(file, 'utf8');

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
