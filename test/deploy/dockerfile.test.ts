// The Dockerfile, read without a Docker engine: what the runtime stage promises (exec-form
// command, a health check on a real route, non-root, production, a supported Node LTS, production
// dependencies only), and a build context that holds what the build stage copies and no secrets.
// test/deploy/production-build.test.ts runs the build stage's steps and the command itself.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import {
  baseImage,
  composeService,
  copyArgs,
  envPairs,
  execForm,
  instructionsOf,
  readCompose,
  readDockerfile,
  repoPath,
  splitFlags,
  type Stage,
} from './deploy-files.js';

// End of life of each Node.js LTS line (the Node.js release schedule). Odd majors are never LTS.
// Add a line when moving to a newer LTS.
const NODE_LTS_END_OF_LIFE: Record<number, string> = { 20: '2026-04-30', 22: '2027-04-30', 24: '2028-04-30', 26: '2029-04-30' };

const stages = readDockerfile();
const runtime = stages.at(-1)!;

const chain = (stage: Stage) => instructionsOf(stages, stage);

const runtimeInstructions = chain(runtime);
const last = (keyword: string) => runtimeInstructions.filter((i) => i.keyword === keyword).at(-1);

/** The node -e script of a health check command, and the path it requests. */
function healthCheckPath(command: readonly string[]): string {
  assert.equal(command[0], 'node', `the health check runs node, not curl or wget (the slim image has neither): ${command.join(' ')}`);
  const path = /['"](\/[\w/-]*)['"]/.exec(command.join(' '))?.[1];
  assert.ok(path, `no path in the health check: ${command.join(' ')}`);
  return path;
}

test('multi-stage: the runtime stage is the last, built on a pinned image', () => {
  assert.ok(stages.length >= 2, 'a build stage and a runtime stage at least');
  for (const stage of stages) {
    const image = baseImage(stages, stage);
    assert.match(image, /^[\w./-]+:[\w.-]+$/, `${image} has no tag`);
    assert.doesNotMatch(image, /:(latest|current|lts)(-|$)/, `${image} is not pinned`);
  }
});

test('the runtime image runs a supported Node LTS', () => {
  const image = baseImage(stages, runtime);
  const major = Number(/^node:(\d+)/.exec(image)?.[1]);
  const endOfLife = NODE_LTS_END_OF_LIFE[major];
  assert.ok(endOfLife, `${image}: Node ${major} is not an LTS line we know (${Object.keys(NODE_LTS_END_OF_LIFE).join(', ')})`);
  assert.ok(new Date() < new Date(`${endOfLife}T00:00:00Z`), `Node ${major} reached end of life on ${endOfLife}: move the Dockerfile to a supported LTS`);
  for (const stage of stages) assert.equal(baseImage(stages, stage), image, 'build and runtime on the same Node');
});

test('one Node major everywhere: the image, engines, the node dev dependency and this test run', () => {
  const major = Number(/^node:(\d+)/.exec(baseImage(stages, runtime))?.[1]);
  const pkg = JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { engines?: { node?: string }; devDependencies?: Record<string, string> };
  assert.equal(pkg.engines?.node, `^${major}`, 'package.json engines.node');
  assert.match(pkg.devDependencies?.node ?? '', new RegExp(`^\\^${major}\\.`), 'the node dev dependency, which npm scripts run on');
  // npm puts node_modules/.bin/node first on PATH: run outside npm, this would be the system's node.
  assert.equal(process.versions.node.split('.')[0], String(major), `tests run on Node ${process.version}: run them with npm test`);
});

test('CMD and ENTRYPOINT are in exec form; CMD starts the compiled service with node itself', () => {
  const cmd = last('CMD');
  assert.ok(cmd, 'the runtime stage has a CMD');
  assert.deepEqual(execForm(cmd.args), ['node', 'dist/src/main.js'], `line ${cmd.line}: CMD ["node", "dist/src/main.js"]`);
  for (const entrypoint of runtimeInstructions.filter((i) => i.keyword === 'ENTRYPOINT')) {
    assert.ok(execForm(entrypoint.args), `line ${entrypoint.line}: ENTRYPOINT in exec form`);
  }
});

test('HEALTHCHECK: exec form, node without curl, /readyz, the same command as the compose file', () => {
  const healthcheck = last('HEALTHCHECK');
  assert.ok(healthcheck, 'the runtime stage has a HEALTHCHECK');
  const { flags, rest } = splitFlags(healthcheck.args);
  assert.match(rest, /^CMD\s/);
  const command = execForm(rest.replace(/^CMD\s+/, ''));
  assert.ok(command, `line ${healthcheck.line}: HEALTHCHECK CMD in exec form`);
  assert.equal(healthCheckPath(command), '/readyz');
  assert.ok(flags.has('start-period'), 'a start period covers migrations at start-up');

  const compose = readCompose();
  for (const name of ['app', 'worker']) {
    const check = composeService(compose, name).healthcheck?.test;
    assert.deepEqual(check, ['CMD', ...command], `docker-compose.yml's ${name} health check`);
  }
});

test('the runtime stage: non-root, NODE_ENV=production, port 3000, production dependencies only', () => {
  const user = last('USER')?.args.split(':')[0];
  assert.ok(user && !['root', '0'].includes(user), `USER ${user ?? '(none: root)'}`);
  const env = new Map(runtimeInstructions.filter((i) => i.keyword === 'ENV').flatMap((i) => [...envPairs(i.args)]));
  assert.equal(env.get('NODE_ENV'), 'production');
  assert.deepEqual(last('EXPOSE')?.args.split(/\s+/), ['3000']);

  const copies = runtime.instructions.filter((i) => i.keyword === 'COPY').map((i) => copyArgs(i.args));
  const modules = copies.find((c) => c.sources.some((s) => /node_modules\/?$/.test(s)));
  assert.ok(modules?.from, 'node_modules comes from a dependencies stage');
  const deps = stages.find((s) => s.name === modules.from);
  assert.ok(
    deps?.instructions.some((i) => i.keyword === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args)),
    `stage ${modules.from} installs with npm ci --omit=dev`,
  );
  for (const copy of copies.filter((c) => !c.from)) {
    assert.deepEqual(
      copy.sources,
      ['package.json', 'LICENSE'],
      'from the build context the runtime takes package.json ("type": "module", the release) and the licence only',
    );
  }
});

test("the runtime stage caps V8's heap in NODE_OPTIONS and exposes gc, and node takes both", async () => {
  const env = new Map(runtimeInstructions.filter((i) => i.keyword === 'ENV').flatMap((i) => [...envPairs(i.args)]));
  const options = env.get('NODE_OPTIONS') ?? '';
  assert.match(options, /--max-old-space-size=\d+/, 'ENV NODE_OPTIONS="--max-old-space-size=…" in the runtime stage');
  // node exits on a flag NODE_OPTIONS does not allow (a typo included), so this also checks that
  // the container starts at all. Without the cap, V8 sizes the heap from the host's memory;
  // without gc, the service keeps its young generation at its largest (src/trim-heap.ts).
  const { stdout } = await promisify(execFile)(process.execPath, ['-p', "[require('node:v8').getHeapStatistics().heap_size_limit, typeof gc].join(' ')"], {
    env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: options },
  });
  const [limit, gc] = stdout.trim().split(' ');
  const limitMb = Number(limit) / 2 ** 20;
  assert.ok(limitMb < 512, `with NODE_OPTIONS=${options} node's heap limit is ${limitMb.toFixed(0)} MB`);
  assert.equal(gc, 'function', `with NODE_OPTIONS=${options} the gc function is there`);
});

test('.dockerignore keeps secrets and local state out and lets the build stage copy what it needs', () => {
  const ignored = readFileSync(repoPath('.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  for (const name of ['.env', 'node_modules', 'dist', '.data', '.git']) assert.ok(ignored.includes(name), `${name} is ignored`);
  // Docker's rule, for the plain paths used here: the last line that matches a path or a folder
  // above it decides, and a `!` line lets it back in (`docs` out, `!docs/openapi.json` in).
  const excluded = (path: string) => {
    const covers = (pattern: string) => path === pattern || path.startsWith(`${pattern}/`);
    const last = ignored.findLast((l) => covers(l.replace(/^!/, '')));
    return last !== undefined && !last.startsWith('!');
  };
  const copied = stages.flatMap((s) => s.instructions.filter((i) => i.keyword === 'COPY').map((i) => copyArgs(i.args)));
  for (const source of copied.filter((c) => !c.from).flatMap((c) => c.sources)) {
    assert.ok(!excluded(source.replace(/\/$/, '')), `${source} is copied but .dockerignore excludes it`);
  }
});
