// docker-compose.yml and .env.example, checked without a Docker engine: the compose-spec schema
// (through dclint, which validates against the spec's JSON schema before its own rules), every
// variable the service reads present in both files with the service's own defaults, and the
// shape docs/deploy.md promises.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { ConfigError } from '../../src/config.js';
import { loadServiceConfig, SERVICE_ENV_VARIABLES } from '../../src/modules/index.js';
import { embeddedPostgresMajor } from '../support/embedded-major.js';
import {
  composeService,
  containerEnvironment,
  durationMs,
  EXAMPLE_SECRETS,
  environmentOf,
  exampleDotenv,
  interpolate,
  interpolatedVariables,
  readCompose,
  readEnvExample,
  repoPath,
  type ComposeService,
} from './deploy-files.js';

const compose = readCompose();
const app = composeService(compose, 'app');
const appEnvironment = environmentOf(app);
const envExample = readEnvExample();
const scratch = mkdtempSync(path.join(tmpdir(), 'stripe-inbox-compose-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** What the app container's environment holds for a given project .env (compose interpolation). */
const appEnvironmentWith = (dotenv: Record<string, string>) => containerEnvironment(app, dotenv);

/** The variables config.ts refuses to start without in production, from its own error. */
function requiredInProduction(): string[] {
  try {
    loadServiceConfig({ NODE_ENV: 'production' });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems.flatMap((p) => /^(\w+) is required when NODE_ENV=production/.exec(p)?.[1] ?? []);
  }
  throw new Error('loadServiceConfig accepted NODE_ENV=production with nothing set');
}

// dclint (zavoloklom/docker-compose-linter) parses the YAML, validates it against the
// compose-spec JSON schema it ships (invalid-schema, never disabled), then applies its rules. Its
// CLI, run as a user would, with the JSON formatter; its bundled type declarations do not resolve
// under NodeNext, so the CLI is also the typed way in.
interface LintResult {
  filePath: string;
  messages: Array<{ rule: string; type: string; message: string; line: number }>;
  errorCount: number;
  warningCount: number;
}
const dclintPackage = createRequire(import.meta.url).resolve('dclint/package.json');
const { bin } = JSON.parse(readFileSync(dclintPackage, 'utf8')) as { bin: Record<string, string> };
const DCLINT = path.join(path.dirname(dclintPackage), bin.dclint!);

async function lint(file: string): Promise<LintResult> {
  const output = await promisify(execFile)(process.execPath, [DCLINT, file, '--formatter', 'json']).catch((error: { stdout?: string }) => ({
    stdout: error.stdout ?? '',
  }));
  const results = JSON.parse(output.stdout) as LintResult[];
  assert.equal(results.length, 1, `dclint linted ${file}`);
  return results[0]!;
}

test('docker-compose.yml is valid against the compose-spec schema and dclint reports no error', async () => {
  const result = await lint(repoPath('docker-compose.yml'));
  const errors = result.messages.filter((m) => m.type === 'error').map((m) => `${m.line}: ${m.rule}: ${m.message}`);
  assert.deepEqual(errors, []);
  assert.equal(result.errorCount, 0);
});

test('the schema check is real: an unknown service key fails it', async () => {
  const file = path.join(scratch, 'docker-compose.yml');
  writeFileSync(file, readFileSync(repoPath('docker-compose.yml'), 'utf8').replace(/^ {4}init: true$/m, '    inti: true'));
  const result = await lint(file);
  assert.ok(
    result.messages.some((m) => m.rule === 'invalid-schema' && m.message.includes('/services/app')),
    JSON.stringify(result.messages),
  );
});

test('every variable the service reads is in the app environment; the worker differs only by ROLE, ports and replicas', () => {
  assert.deepEqual(
    SERVICE_ENV_VARIABLES.filter((name) => !(name in appEnvironment)),
    [],
    'missing from services.app.environment',
  );
  const worker = composeService(compose, 'worker');
  assert.deepEqual({ ...environmentOf(worker), ROLE: undefined }, { ...appEnvironment, ROLE: undefined });
  assert.equal(environmentOf(worker).ROLE, 'worker');
  const rest = (service: ComposeService) =>
    Object.fromEntries(Object.entries(service).filter(([key]) => !['environment', 'ports', 'profiles', 'deploy'].includes(key)));
  assert.deepEqual(rest(worker), rest(app));
  assert.deepEqual(worker.profiles, ['workers']);
  assert.equal(worker.ports, undefined, 'replicas publish no port');
});

test('.env.example lists every variable the service reads or compose interpolates, and nothing else', () => {
  const listed = envExample.map((e) => e.name);
  assert.equal(new Set(listed).size, listed.length, 'a variable is listed twice');
  const used = new Set<string>([...SERVICE_ENV_VARIABLES, ...interpolatedVariables(compose)]);
  assert.deepEqual(
    [...used].filter((name) => !listed.includes(name)),
    [],
    'missing from .env.example',
  );
  assert.deepEqual(
    listed.filter((name) => !used.has(name)),
    [],
    'in .env.example but read by nothing',
  );
  for (const entry of envExample) assert.ok(entry.comment.length > 0, `${entry.name} has no comment`);
});

test('.env.example marks the variables production requires', () => {
  const required = [...requiredInProduction(), 'POSTGRES_PASSWORD'];
  assert.ok(required.includes('STRIPE_WEBHOOK_SECRET'));
  for (const name of required) {
    const entry = envExample.find((e) => e.name === name);
    assert.match(entry?.comment ?? '', /REQUIRED/, `${name} is not marked REQUIRED`);
  }
  const marked = envExample.filter((e) => /REQUIRED/.test(e.comment)).map((e) => e.name);
  assert.deepEqual(marked.sort(), required.sort());
});

test("compose's defaults are the service's own defaults", () => {
  const container = appEnvironmentWith({ POSTGRES_PASSWORD: EXAMPLE_SECRETS.POSTGRES_PASSWORD });
  const set = { ...EXAMPLE_SECRETS, NODE_ENV: 'production', DATABASE_URL: container.DATABASE_URL };
  assert.deepEqual(loadServiceConfig({ ...container, ...set }), loadServiceConfig(set));
  assert.equal(container.DATABASE_URL, `postgres://stripe_inbox:${EXAMPLE_SECRETS.POSTGRES_PASSWORD}@postgres:5432/stripe_inbox`);
});

test('.env.example with its REQUIRED values filled in is a valid production configuration', () => {
  const dotenv = Object.fromEntries(envExample.map((e) => [e.name, e.value]));
  assert.throws(() => appEnvironmentWith(dotenv), /POSTGRES_PASSWORD/, 'compose refuses to start without a database password');
  const config = loadServiceConfig(appEnvironmentWith(exampleDotenv()));
  assert.equal(config.nodeEnv, 'production');
  assert.equal(config.role, 'all');
  assert.equal(config.trustProxyHops, 1, 'behind Coolify/Traefik');
});

// The embedded Postgres is the second server CI runs the suite on (test/run.ts, TEST_POSTGRES).
const EMBEDDED_MAJOR = embeddedPostgresMajor();

test('Postgres: the major the suite runs on, named volume, pg_isready health check, not published', () => {
  const postgres = composeService(compose, 'postgres');
  const image = /^postgres:(\d+)(\.\d+)?(-[\w.]+)?$/.exec(postgres.image ?? '');
  assert.ok(image, `${postgres.image} is not a pinned major (never latest)`);
  assert.equal(Number(image[1]), EMBEDDED_MAJOR, 'the major of the embedded Postgres, which CI runs the suite on');
  assert.equal(postgres.ports, undefined, 'Postgres is not published to the host');
  // From 18 the image's PGDATA is /var/lib/postgresql/<major>/docker under a volume declared at
  // /var/lib/postgresql, and it refuses to start with a mount at the old .../data.
  const mounts = (postgres.volumes ?? []).filter((v): v is string => typeof v === 'string');
  const volume = mounts.find((v) => v.endsWith(':/var/lib/postgresql'));
  assert.ok(volume && compose.volumes && volume.split(':')[0]! in compose.volumes, 'data on a named volume at /var/lib/postgresql');
  assert.deepEqual(
    mounts.filter((v) => v.includes(':/var/lib/postgresql/')),
    [],
    'nothing mounted inside it',
  );
  assert.equal(environmentOf(postgres).PGDATA, undefined, "the image's own PGDATA");
  assert.match(JSON.stringify(postgres.healthcheck?.test), /pg_isready/);
  assert.equal(postgres.restart, 'unless-stopped');
});

test('app: waits for a healthy Postgres, checks /readyz, runs under an init, outlives its shutdown budget', () => {
  assert.deepEqual(app.depends_on, { postgres: { condition: 'service_healthy' } });
  assert.match(JSON.stringify(app.healthcheck?.test), /\/readyz/);
  assert.equal(app.init, true);
  assert.equal(app.restart, 'unless-stopped');
  assert.ok(app.build !== undefined && app.image === undefined, 'built from this repository');
  // .env is optional for compose itself: every variable is listed under environment.
  assert.deepEqual(app.env_file, [{ path: '.env', required: false }]);
  const budgetSeconds = Number(interpolate(appEnvironment.SHUTDOWN_TIMEOUT_SECONDS!, {}));
  const exampleBudget = Number(envExample.find((e) => e.name === 'SHUTDOWN_TIMEOUT_SECONDS')?.value);
  const graceMs = durationMs(app.stop_grace_period ?? '10s');
  for (const seconds of [budgetSeconds, exampleBudget]) {
    assert.ok(graceMs >= (seconds + 5) * 1000, `stop_grace_period ${app.stop_grace_period} must exceed SHUTDOWN_TIMEOUT_SECONDS=${seconds} by 5 s or more`);
  }
  for (const port of app.ports ?? []) {
    assert.ok(typeof port === 'string' && port.startsWith('127.0.0.1:'), 'published on loopback only: the proxy faces the internet');
  }
});

test("dev profile: Stripe's CLI forwards to the app's webhook route", () => {
  const stripe = composeService(compose, 'stripe');
  assert.deepEqual(stripe.profiles, ['dev']);
  assert.match(stripe.image ?? '', /^stripe\/stripe-cli:v\d+\.\d+\.\d+$/, 'a pinned version');
  const command = Array.isArray(stripe.command) ? stripe.command : [];
  const target = interpolate(command[command.indexOf('--forward-to') + 1] ?? '', {});
  assert.equal(target, `app:${interpolate(appEnvironment.PORT!, {})}/webhooks/stripe`);
  assert.match(environmentOf(stripe).STRIPE_API_KEY ?? '', /STRIPE_SECRET_KEY/);
});
