// loadConfig, with the service's modules (loadServiceConfig): every problem, the core's and the
// modules' settings', reported at once with an example, production refuses to start without its
// secrets, and the result's fields carry units. Outside production every secret is
// passed in, so loadConfig never generates ./.data/dev-secrets.json from a test.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { ConfigError, defineSettings, envVariables, loadConfig, type SettingsTable } from '../src/config.js';
import { loadDevSecrets } from '../src/dev/dev-secrets.js';
import { nominalRetryDelayMs, retryDelayMs } from '../src/notifications/backoff.js';
import { loadServiceConfig, SERVICE_ENV_VARIABLES } from '../src/modules/index.js';

const SECRETS = {
  STRIPE_WEBHOOK_SECRET: 'whsec_test_config_0123456789abcdef',
  API_TOKEN: 'test-api-token-0123456789',
  ADMIN_TOKEN: 'test-admin-token-0123456789',
};
const PRODUCTION = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://app:secret@db:5432/stripe_inbox',
  STRIPE_SECRET_KEY: 'sk_live_0123456789abcdefghijklmn',
  CHECKOUT_SUCCESS_URL: 'https://shop.example.test/thanks',
  CHECKOUT_CANCEL_URL: 'https://shop.example.test/pricing',
  ...SECRETS,
};

/** The problems loadServiceConfig reports, or a failed assertion if it accepts the env. */
function problemsOf(env: NodeJS.ProcessEnv): readonly string[] {
  try {
    loadServiceConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error.problems;
  }
  assert.fail('loadServiceConfig accepted an invalid configuration');
}

describe('invalid values', () => {
  test('are all reported at once, each with the variable and an example', () => {
    const problems = problemsOf({ NODE_ENV: 'test', ...SECRETS, PORT: 'eighty', ROLE: 'frontend', EVENT_RETENTION_DAYS: '7' });
    assert.equal(problems.length, 3, problems.join('\n'));
    for (const [name, example] of [
      ['PORT', 'PORT=3000'],
      ['ROLE', 'ROLE=web'],
      ['EVENT_RETENTION_DAYS', 'EVENT_RETENTION_DAYS=90'],
    ] as const) {
      const problem = problems.find((p) => p.startsWith(`${name} `));
      assert.ok(problem, `no problem reported for ${name}`);
      assert.ok(problem.includes(`(example: ${example})`), problem);
    }
  });

  test('the message of the error lists every problem, one a line', () => {
    assert.throws(
      () => loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, PORT: '70000', MAX_ATTEMPTS: '0' }),
      (error: unknown) => error instanceof ConfigError && /\n {2}- PORT .*\n {2}- MAX_ATTEMPTS /s.test(error.message),
    );
  });

  test("OpenTelemetry's exporter variables the SDK would read are checked with the rest, the _TRACES_ twins too", () => {
    const problems = problemsOf({
      NODE_ENV: 'test',
      ...SECRETS,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TIMEOUT: '10s',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'zstd',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'api-key',
    });
    assert.deepEqual(
      problems.map((p) => p.split(' ')[0]),
      ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION'],
    );
    assert.match(problems[0]!, /must be http\/json/);
  });

  test('an event retention under Stripe’s 30-day resend window is refused, 31 days is accepted', () => {
    assert.match(problemsOf({ NODE_ENV: 'test', ...SECRETS, EVENT_RETENTION_DAYS: '30' }).join('\n'), /^EVENT_RETENTION_DAYS /);
    assert.equal(loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, EVENT_RETENTION_DAYS: '31' }).eventRetentionDays, 31);
  });

  test('a webhook secret that is not a whsec_ secret is refused', () => {
    assert.match(
      problemsOf({ NODE_ENV: 'test', ...SECRETS, STRIPE_WEBHOOK_SECRET: `${SECRETS.STRIPE_WEBHOOK_SECRET},sk_live_oops` }).join('\n'),
      /^STRIPE_WEBHOOK_SECRET .*whsec_/,
    );
  });

  // `whsec_` alone verified any body signed with the empty key: anyone could forge a delivery.
  test('a webhook secret needs 24 characters after whsec_, in every configured secret', () => {
    for (const secret of ['whsec_', `whsec_${'a1'.repeat(11)}b`, `"whsec_${'a1'.repeat(16)}"`, `${SECRETS.STRIPE_WEBHOOK_SECRET},whsec_old`]) {
      const [problem, ...more] = problemsOf({ NODE_ENV: 'test', ...SECRETS, STRIPE_WEBHOOK_SECRET: secret });
      assert.equal(more.length, 0, secret);
      assert.match(problem!, /^STRIPE_WEBHOOK_SECRET each secret must be whsec_ followed by at least 24 .*\(example: STRIPE_WEBHOOK_SECRET=whsec_/, secret);
    }
    assert.deepEqual(loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, STRIPE_WEBHOOK_SECRET: `whsec_${'a1'.repeat(12)}` }).webhookSecrets, [
      `whsec_${'a1'.repeat(12)}`,
    ]);
  });

  test('a Stripe API key needs its prefix and 24 characters after it', () => {
    for (const key of ['sk_live_', 'sk_test_offline', `pk_live_${'x'.repeat(24)}`, `sk_live_${'x'.repeat(23)}`]) {
      assert.match(
        problemsOf({ ...PRODUCTION, STRIPE_SECRET_KEY: key }).join('\n'),
        /^STRIPE_SECRET_KEY must be sk_ or rk_.* at least 24 .*\(example: STRIPE_SECRET_KEY=sk_live_/,
        key,
      );
    }
    for (const key of [`sk_live_${'x'.repeat(24)}`, `rk_test_${'x'.repeat(99)}`]) {
      assert.equal(loadServiceConfig({ ...PRODUCTION, STRIPE_SECRET_KEY: key }).stripeSecretKey, key);
    }
  });

  test('the secrets development generates pass production’s rules', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'stripe-inbox-config-'));
    try {
      const dev = loadDevSecrets(dataDir);
      const config = loadServiceConfig({
        ...PRODUCTION,
        STRIPE_WEBHOOK_SECRET: dev.webhookSecret,
        API_TOKEN: dev.apiToken,
        ADMIN_TOKEN: dev.adminToken,
        APP_WEBHOOK_URL: 'https://app.example.test/hooks',
        APP_WEBHOOK_SECRET: dev.appWebhookSecret,
      });
      assert.equal(config.adminToken, dev.adminToken);
      assert.deepEqual(config.appWebhookSecrets, [dev.appWebhookSecret]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

test('development secrets written before notifications are kept, and a signing secret is added', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'stripe-inbox-config-'));
  try {
    const before = { webhookSecret: `whsec_dev_${'a'.repeat(48)}`, apiToken: 'dev_api_0123456789abcdef', adminToken: 'dev_admin_0123456789abcdef' };
    writeFileSync(join(dataDir, 'dev-secrets.json'), JSON.stringify(before));
    const dev = loadDevSecrets(dataDir);
    assert.deepEqual([dev.webhookSecret, dev.apiToken, dev.adminToken], [before.webhookSecret, before.apiToken, before.adminToken]);
    assert.match(dev.appWebhookSecret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(
      (JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as { appWebhookSecret: string }).appWebhookSecret,
      dev.appWebhookSecret,
      'kept for the next start',
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

describe('production', () => {
  test('without DATABASE_URL, Stripe secrets, tokens and checkout URLs fails naming each one', () => {
    const problems = problemsOf({ NODE_ENV: 'production' });
    const required = ['DATABASE_URL', 'STRIPE_WEBHOOK_SECRET', 'STRIPE_SECRET_KEY', 'API_TOKEN', 'ADMIN_TOKEN', 'CHECKOUT_SUCCESS_URL', 'CHECKOUT_CANCEL_URL'];
    for (const name of required) {
      assert.ok(
        problems.some((p) => p.startsWith(`${name} is required when NODE_ENV=production`) && p.includes('(example: ')),
        `${name} missing from:\n${problems.join('\n')}`,
      );
    }
    assert.equal(problems.length, required.length);
  });

  test('an empty variable counts as missing', () => {
    assert.deepEqual(
      problemsOf({ ...PRODUCTION, ADMIN_TOKEN: '' }).map((p) => p.split(' ')[0]),
      ['ADMIN_TOKEN'],
    );
  });

  test('with everything set, starts without development secrets', () => {
    const config = loadServiceConfig(PRODUCTION);
    assert.equal(config.nodeEnv, 'production');
    assert.equal(config.databaseUrl, PRODUCTION.DATABASE_URL);
    assert.equal(config.apiToken, SECRETS.API_TOKEN);
    assert.equal(config.devSecretsFile, undefined);
    assert.ok(Object.isFrozen(config));
  });

  test('a short token is refused', () => {
    assert.match(problemsOf({ ...PRODUCTION, API_TOKEN: 'short' }).join('\n'), /^API_TOKEN must be at least 16 characters/);
  });

  test('a token with a space or a non-ASCII character is refused: a bearer header could never carry it', () => {
    for (const token of [`${SECRETS.API_TOKEN} `, 'test-api token-0123456789', 'test-api-tökén-0123456789']) {
      assert.match(problemsOf({ ...PRODUCTION, API_TOKEN: token }).join('\n'), /^API_TOKEN must be letters, digits and punctuation only, without spaces/);
    }
  });

  test('a token with fewer than 10 different characters is refused, 10 are enough', () => {
    for (const [name, token] of [
      ['API_TOKEN', 'a'.repeat(32)],
      ['ADMIN_TOKEN', 'passwordpassword'],
      ['METRICS_TOKEN', '123456789123456789'],
    ] as const) {
      assert.deepEqual(problemsOf({ ...PRODUCTION, [name]: token }), [
        `${name} has only ${new Set(token).size} different characters; production needs at least 10 (example: ${name}=a long random string${name === 'METRICS_TOKEN' ? ' for Prometheus' : ''} (openssl rand -hex 32))`,
      ]);
    }
    assert.equal(loadServiceConfig({ ...PRODUCTION, METRICS_TOKEN: '1234567890123456' }).metricsToken, '1234567890123456');
  });

  test('the API token may not double as the admin or the metrics token; the metrics token may be the admin token', () => {
    assert.deepEqual(
      problemsOf({ ...PRODUCTION, ADMIN_TOKEN: SECRETS.API_TOKEN, METRICS_TOKEN: SECRETS.API_TOKEN }).map((p) => p.split(':')[0]),
      ['ADMIN_TOKEN must differ from API_TOKEN', 'METRICS_TOKEN must differ from API_TOKEN'],
    );
    assert.equal(loadServiceConfig({ ...PRODUCTION, METRICS_TOKEN: SECRETS.ADMIN_TOKEN }).metricsToken, SECRETS.ADMIN_TOKEN);
  });

  test('without METRICS_TOKEN, starts with a warning that /metrics takes the admin token', () => {
    const [warning, ...more] = loadServiceConfig(PRODUCTION).warnings;
    assert.equal(more.length, 0);
    assert.match(warning!, /^METRICS_TOKEN is unset, so GET \/metrics accepts ADMIN_TOKEN.*\(example: METRICS_TOKEN=/);
    assert.deepEqual(loadServiceConfig({ ...PRODUCTION, METRICS_TOKEN: 'test-metrics-token-0123456789' }).warnings, []);
    assert.deepEqual(loadServiceConfig({ NODE_ENV: 'test', ...SECRETS }).warnings, [], 'outside production the default is fine');
  });
});

describe('valid values', () => {
  test('comma-separated webhook secrets (a rotation) parse to each secret, trimmed', () => {
    const [next, previous] = [`whsec_new_${'1'.repeat(24)}`, `whsec_old_${'2'.repeat(24)}`];
    const config = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, STRIPE_WEBHOOK_SECRET: `${next}, ${previous},` });
    assert.deepEqual(config.webhookSecrets, [next, previous]);
  });

  test('defaults are the documented ones (.env.example), in fields that carry their unit', () => {
    const config = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS });
    assert.equal(config.port, 3000);
    assert.equal(config.role, 'all');
    assert.equal(config.workerConcurrency, 5);
    assert.equal(config.staleAfterMs, 300_000);
    assert.equal(config.sweepCron, '* * * * *');
    assert.equal(config.maxAttempts, 10);
    assert.equal(config.eventRetentionDays, 90);
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.devSecretsFile, undefined);
  });

  test('seconds in the environment become milliseconds in the config', () => {
    const config = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, STALE_AFTER_SECONDS: '30', SHUTDOWN_TIMEOUT_SECONDS: '2' });
    assert.equal(config.staleAfterMs, 30_000);
    assert.equal(config.shutdownTimeoutMs, 2_000);
  });

  test('every other duration is in milliseconds and the webhook body budget in bytes, set or by default', () => {
    const config = loadServiceConfig({
      NODE_ENV: 'test',
      ...SECRETS,
      STRIPE_TIMEOUT_SECONDS: '3',
      HTTP_REQUEST_TIMEOUT_SECONDS: '4',
      WEBHOOK_BODY_BUDGET_MB: '2',
    });
    assert.deepEqual([config.stripeTimeoutMs, config.httpRequestTimeoutMs, config.webhookBodyBudgetBytes], [3_000, 4_000, 2 * 1024 * 1024]);
    const defaults = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS });
    assert.deepEqual([defaults.stripeTimeoutMs, defaults.httpRequestTimeoutMs, defaults.webhookBodyBudgetBytes], [5_000, 30_000, 16 * 1024 * 1024]);
    assert.equal(defaults.shutdownTimeoutMs, 25_000);
  });

  test('defaults that follow other settings: checkout URLs on PORT, the log level on NODE_ENV, METRICS_TOKEN on ADMIN_TOKEN', () => {
    const config = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, PORT: '4000' });
    for (const module of ['credits', 'billing']) {
      assert.equal(config.moduleSettings[module]?.checkoutSuccessUrl, 'http://localhost:4000/checkout/success?session_id={CHECKOUT_SESSION_ID}', module);
      assert.equal(config.moduleSettings[module]?.checkoutCancelUrl, 'http://localhost:4000/checkout/cancel', module);
    }
    assert.equal(config.logLevel, 'silent');
    assert.equal(config.metricsToken, SECRETS.ADMIN_TOKEN);
    assert.equal(loadServiceConfig({ NODE_ENV: 'development', ...SECRETS }).logLevel, 'info');
    assert.equal(loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, LOG_LEVEL: 'debug' }).logLevel, 'debug');
  });

  test('live mode is read from the Stripe key', () => {
    assert.equal(loadServiceConfig(PRODUCTION).stripeLivemode, true);
    assert.equal(loadServiceConfig({ ...PRODUCTION, STRIPE_SECRET_KEY: `rk_test_${'x'.repeat(24)}` }).stripeLivemode, false);
    assert.equal(loadServiceConfig({ NODE_ENV: 'test', ...SECRETS }).stripeLivemode, false);
  });

  test('each variable is read by one setting', () => {
    assert.equal(new Set(SERVICE_ENV_VARIABLES).size, SERVICE_ENV_VARIABLES.length, SERVICE_ENV_VARIABLES.join(' '));
  });
});

describe('outcome notifications (APP_WEBHOOK_*)', () => {
  const secretOf = (bytes: number) => `whsec_${Buffer.alloc(bytes, 7).toString('base64')}`;
  const NOTIFYING = { APP_WEBHOOK_URL: 'https://app.example.test/hooks', APP_WEBHOOK_SECRET: secretOf(32) };

  test('unset: no endpoint, so nothing is written; the defaults are 10 s, 23 attempts and 4 at once', () => {
    const config = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS });
    assert.deepEqual([config.appWebhookUrls, config.appWebhookSecrets], [[], []]);
    assert.deepEqual([config.appWebhookTimeoutMs, config.appWebhookMaxAttempts, config.appWebhookConcurrency], [10_000, 23, 4]);
  });

  test('several URLs and, during a rotation, several secrets are each read, trimmed', () => {
    const config = loadServiceConfig({
      NODE_ENV: 'test',
      ...SECRETS,
      APP_WEBHOOK_URL: 'https://a.example.test/x, https://b.example.test/y',
      APP_WEBHOOK_SECRET: `${secretOf(24)}, ${secretOf(64)}`,
    });
    assert.deepEqual(config.appWebhookUrls, ['https://a.example.test/x', 'https://b.example.test/y']);
    assert.deepEqual(config.appWebhookSecrets, [secretOf(24), secretOf(64)]);
  });

  test('a URL that is not one, is listed twice or carries a password is refused', () => {
    assert.match(
      problemsOf({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_URL: 'app.example.test/hooks' }).join('\n'),
      /^APP_WEBHOOK_URL each URL must be an http\(s\) URL .*example: APP_WEBHOOK_URL=https:/m,
    );
    assert.match(
      problemsOf({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_URL: 'ftp://app.example.test/hooks' }).join('\n'),
      /APP_WEBHOOK_URL each URL must be an http\(s\) URL/,
    );
    assert.match(
      problemsOf({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_URL: 'https://a.test/x,https://a.test/x' }).join('\n'),
      /APP_WEBHOOK_URL lists a URL twice/,
    );
    const withPassword = problemsOf({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_URL: 'https://app:hunter2@a.test/x' }).join('\n');
    assert.match(withPassword, /APP_WEBHOOK_URL must not carry user:password@/);
    assert.doesNotMatch(withPassword, /hunter2/, 'the problem does not repeat the password');
  });

  test('a secret must be whsec_ and the base64 of 24 to 64 bytes', () => {
    for (const secret of ['whsec_', secretOf(23), secretOf(65), `whsec_${'!'.repeat(44)}`, secretOf(32).replace('whsec_', ''), `${secretOf(32)}=`]) {
      assert.match(
        problemsOf({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_SECRET: secret }).join('\n'),
        /^APP_WEBHOOK_SECRET each secret must be whsec_ followed by the base64 of 24 to 64 random bytes/m,
        secret,
      );
    }
    assert.match(
      problemsOf({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_SECRET: `${secretOf(32)},whsec_short` }).join('\n'),
      /APP_WEBHOOK_SECRET each secret/,
      'every secret of a rotation',
    );
  });

  test('production needs the secret with the URL, and https except to this host', () => {
    assert.match(
      problemsOf({ ...PRODUCTION, APP_WEBHOOK_URL: NOTIFYING.APP_WEBHOOK_URL }).join('\n'),
      /APP_WEBHOOK_SECRET is required when APP_WEBHOOK_URL is set/,
    );
    assert.match(
      problemsOf({ ...PRODUCTION, ...NOTIFYING, APP_WEBHOOK_URL: 'http://app.example.test/hooks' }).join('\n'),
      /APP_WEBHOOK_URL http:\/\/app\.example\.test must be https:\/\/ when NODE_ENV=production/,
    );
    for (const url of ['http://localhost:8080/hooks', 'http://127.0.0.1:8080/hooks', 'http://[::1]:8080/hooks', 'https://app.example.test/hooks']) {
      assert.deepEqual(loadServiceConfig({ ...PRODUCTION, ...NOTIFYING, APP_WEBHOOK_URL: url }).appWebhookUrls, [url]);
    }
    assert.deepEqual(
      loadServiceConfig({ NODE_ENV: 'test', ...SECRETS, ...NOTIFYING, APP_WEBHOOK_URL: 'http://app.example.test/hooks' }).appWebhookUrls,
      ['http://app.example.test/hooks'],
      'outside production, http is allowed',
    );
  });

  test('the default attempts span about three days, each wait jittered by at most a fifth', () => {
    const config = loadServiceConfig({ NODE_ENV: 'test', ...SECRETS });
    let nominal = 0;
    for (let attempt = 1; attempt < config.appWebhookMaxAttempts; attempt++) {
      nominal += nominalRetryDelayMs(attempt);
      for (const random of [0, 0.5, 0.999]) {
        const jittered = retryDelayMs(attempt, random);
        assert.ok(Math.abs(jittered - nominalRetryDelayMs(attempt)) <= nominalRetryDelayMs(attempt) * 0.2, `attempt ${attempt}`);
      }
    }
    const days = nominal / 86_400_000;
    assert.ok(days > 2.8 && days < 3.2, `the last attempt ${days.toFixed(2)} days after the first`);
  });
});

describe("the modules' settings", () => {
  const probe = (settings: SettingsTable) => ({ name: 'probe', settings });
  const table = defineSettings({
    probeLimit: { env: 'PROBE_LIMIT', schema: z.string().regex(/^\d+$/, 'must be a whole number').transform(Number), example: '7', default: '3' },
  });

  test("are checked with the core's, every problem in one error", () => {
    const problems = problemsOf({ NODE_ENV: 'test', ...SECRETS, PORT: 'eighty', REFUND_POLICY: 'half', CHECKOUT_CANCEL_URL: 'ftp://shop.example.test' });
    assert.deepEqual(
      problems.map((p) => p.split(' ')[0]),
      ['PORT', 'REFUND_POLICY', 'CHECKOUT_CANCEL_URL'],
    );
    assert.match(problems[1]!, /\(example: REFUND_POLICY=full\)$/);
  });

  test('are given to their module only, by name, with their defaults', () => {
    const config = loadConfig({ NODE_ENV: 'test', ...SECRETS, PROBE_LIMIT: '9' }, [probe(table)]);
    assert.deepEqual(config.moduleSettings, { probe: { probeLimit: 9 } });
    assert.deepEqual(loadConfig({ NODE_ENV: 'test', ...SECRETS }, [probe(table)]).moduleSettings.probe, { probeLimit: 3 });
    assert.equal((config as unknown as Record<string, unknown>).probeLimit, undefined, 'not a field of the core');
  });

  test('an entry several modules list is one variable, read once and given to each', () => {
    const modules = [probe(table), { name: 'other', settings: { limit: table.probeLimit } }];
    assert.deepEqual(
      envVariables(modules).filter((name) => name === 'PROBE_LIMIT'),
      ['PROBE_LIMIT'],
    );
    assert.deepEqual(loadConfig({ NODE_ENV: 'test', ...SECRETS, PROBE_LIMIT: '5' }, modules).moduleSettings, { probe: { probeLimit: 5 }, other: { limit: 5 } });
    assert.deepEqual(problemsOf({ NODE_ENV: 'test', ...SECRETS, REFUND_POLICY: 'half' }).length, 1, 'credits and billing both list REFUND_POLICY');
    assert.deepEqual(
      problemsOf({ NODE_ENV: 'test', ...SECRETS, DISPUTE_POLICY: 'keep' }),
      ['DISPUTE_POLICY Invalid option: expected one of "revoke"|"ignore" (example: DISPUTE_POLICY=revoke)'],
      'credits and billing both list DISPUTE_POLICY',
    );
  });

  test('two different settings of one variable are refused before anything is read', () => {
    const twin = { probeLimit: { ...table.probeLimit } };
    assert.throws(
      () => loadConfig({}, [probe(table), { name: 'other', settings: twin }]),
      /^Error: PROBE_LIMIT is declared twice, by probe \(probeLimit\) and by other \(probeLimit\)/,
    );
    assert.throws(
      () => loadConfig({}, [probe({ port: { ...table.probeLimit, env: 'PORT' } })]),
      /PORT is declared twice, by the core \(port\) and by probe \(port\)/,
    );
  });

  test('an ops script, which runs no module, reads the core settings only', () => {
    assert.deepEqual(loadConfig({ NODE_ENV: 'test', ...SECRETS, REFUND_POLICY: 'half' }).moduleSettings, {});
  });
});
