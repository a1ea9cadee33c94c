// The only reader of process.env. Everything is validated here, every problem is reported at
// once with an example value, and the result is a frozen object whose field names carry units.
import { z } from 'zod';
import { loadDevSecrets } from './dev/dev-secrets.js';

export const ROLES = ['all', 'web', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** How many credits refunds take back (src/modules/credits/credit-revocations.ts). */
export const REFUND_POLICIES = ['full', 'proportional'] as const;
export type RefundPolicy = (typeof REFUND_POLICIES)[number];

export interface Config {
  readonly nodeEnv: 'development' | 'production' | 'test';
  /** Unset in development: main.ts then starts an embedded Postgres under ./.data. */
  readonly databaseUrl: string | undefined;
  /** Several during a rotation: an event is accepted if any of them verifies its signature. */
  readonly webhookSecrets: readonly string[];
  /** Unset in development: main.ts then starts the offline Stripe stand-in. */
  readonly stripeSecretKey: string | undefined;
  readonly stripeApiBase: string | undefined;
  /** The mode of STRIPE_SECRET_KEY (sk_live_/rk_live_): events of the other mode never act. */
  readonly stripeLivemode: boolean;
  readonly refundPolicy: RefundPolicy;
  readonly port: number;
  readonly role: Role;
  readonly apiToken: string;
  readonly adminToken: string;
  /** Bearer token for GET /metrics; ADMIN_TOKEN when unset. */
  readonly metricsToken: string;
  readonly workerConcurrency: number;
  readonly staleAfterMs: number;
  readonly sweepCron: string;
  readonly maxAttempts: number;
  readonly eventRetentionDays: number;
  readonly shutdownTimeoutMs: number;
  readonly checkoutSuccessUrl: string;
  readonly checkoutCancelUrl: string;
  readonly logLevel: string;
  /** Proxies in front of the service (Traefik: 1); 0 reads the client IP from the socket. */
  readonly trustProxyHops: number;
  /** Per client IP: /api requests; /admin gets a quarter, rejected webhooks half; 0 is off. */
  readonly rateLimitPerMinute: number;
  /** Where the development secrets came from, so start-up can print how to use them. */
  readonly devSecretsFile: string | undefined;
  /** Per attempt of an outbound Stripe call (the SDK retries once). */
  readonly stripeTimeoutMs: number;
  /** Outbound Stripe calls in flight at once in this process; more are answered 503. */
  readonly stripeMaxConcurrentCalls: number;
  /** Longest an HTTP request may take to arrive, headers and body. */
  readonly httpRequestTimeoutMs: number;
  /** Bytes of not yet verified webhook bodies held at once; beyond it deliveries get 503. */
  readonly webhookBodyBudgetBytes: number;
  /** What is allowed but unwise (e.g. no METRICS_TOKEN in production): main.ts logs each at start-up. */
  readonly warnings: readonly string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

// Stripe's signing secrets are `whsec_` and 32 or more base64 characters (the CLI's: 64 hex), its
// API keys `sk_`/`rk_`, the mode and 24 or more. A shorter value is a placeholder or a truncated
// paste, and `whsec_` alone is worse: the webhook then verifies anything signed with the empty key.
// Quotes or spaces are not in any of them: they are a paste from a .env file gone wrong.
const STRIPE_SECRET_MIN_CHARS = 24;
const webhookSecret = z
  .string()
  .regex(new RegExp(`^whsec_[\\w+/=-]{${STRIPE_SECRET_MIN_CHARS},}$`), `each secret must be whsec_ followed by at least ${STRIPE_SECRET_MIN_CHARS} letters or digits, as Stripe shows it`);

// Tokens guard money-adjacent routes: short ones are guessable.
const token = z.string().min(16, 'must be at least 16 characters');
// In production a token also needs this many different characters: that refuses what a person
// types (`aaaa…`, `passwordpassword`, `changeme-changeme`), never `openssl rand -hex 32` (64 hex
// characters show fewer than 10 of the 16 digits about once in 10^11) nor the development tokens.
const TOKEN_MIN_DISTINCT_CHARS = 10;
const TOKEN_EXAMPLE = 'a long random string (openssl rand -hex 32)';

// Each variable: its schema and an example shown when it is wrong.
const variables = {
  NODE_ENV: { schema: z.enum(['development', 'production', 'test']), example: 'production' },
  DATABASE_URL: { schema: z.string().regex(/^postgres(ql)?:\/\//, 'must start with postgres://'), example: 'postgres://user:pass@db:5432/stripe_inbox' },
  STRIPE_WEBHOOK_SECRET: {
    schema: z
      .string()
      .transform((s) => s.split(',').map((p) => p.trim()).filter((p) => p !== ''))
      .pipe(z.array(webhookSecret).min(1, 'must list at least one secret')),
    example: 'whsec_<32+ characters from the endpoint’s page>,whsec_<the previous one, during a rotation>',
  },
  STRIPE_SECRET_KEY: {
    schema: z
      .string()
      .regex(new RegExp(`^(sk|rk)_(test|live)_\\w{${STRIPE_SECRET_MIN_CHARS},}$`), `must be sk_ or rk_, test_ or live_, then at least ${STRIPE_SECRET_MIN_CHARS} letters or digits`),
    example: 'sk_live_<the key from the dashboard’s API keys page>',
  },
  STRIPE_API_BASE: { schema: httpUrl, example: 'http://localhost:12111' },
  PORT: { schema: int(0, 65535), example: '3000' },
  ROLE: { schema: z.enum(ROLES), example: 'web' },
  API_TOKEN: { schema: token, example: TOKEN_EXAMPLE },
  ADMIN_TOKEN: { schema: token, example: TOKEN_EXAMPLE },
  METRICS_TOKEN: { schema: token, example: 'a long random string for Prometheus (openssl rand -hex 32)' },
  WORKER_CONCURRENCY: { schema: int(1, 100), example: '5' },
  STALE_AFTER_SECONDS: { schema: int(1, 86_400), example: '300' },
  SWEEP_CRON: { schema: z.string().regex(/^(\S+\s+){4}\S+$/, 'must have five crontab fields'), example: '* * * * *' },
  MAX_ATTEMPTS: { schema: int(1, 100), example: '10' },
  // Stripe resends events for up to 30 days; pruning sooner would let a late resend through
  // the event-id claim (business idempotency still holds, but audit is lost).
  EVENT_RETENTION_DAYS: { schema: int(31, 36_500), example: '90' },
  SHUTDOWN_TIMEOUT_SECONDS: { schema: int(1, 3_600), example: '25' },
  REFUND_POLICY: { schema: z.enum(REFUND_POLICIES), example: 'full' },
  CHECKOUT_SUCCESS_URL: { schema: httpUrl, example: 'https://example.com/thanks?session_id={CHECKOUT_SESSION_ID}' },
  CHECKOUT_CANCEL_URL: { schema: httpUrl, example: 'https://example.com/pricing' },
  // A hop count, not `true`: trusting every X-Forwarded-For entry lets any client pick its IP.
  TRUST_PROXY: {
    schema: z
      .string()
      .regex(/^(false|\d{1,2})$/, 'must be false or the number of proxies in front (1 behind Traefik)')
      .transform((v) => (v === 'false' ? 0 : Number(v)))
      .pipe(z.number().int().max(10, 'must be at most 10 proxies')),
    example: '1',
  },
  RATE_LIMIT_PER_MINUTE: { schema: int(0, 1_000_000), example: '1200' },
  LOG_LEVEL: { schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), example: 'info' },
  STRIPE_TIMEOUT_SECONDS: { schema: int(1, 60), example: '5' },
  STRIPE_MAX_CONCURRENT_CALLS: { schema: int(1, 1_000), example: '8' },
  HTTP_REQUEST_TIMEOUT_SECONDS: { schema: int(1, 300), example: '30' },
  WEBHOOK_BODY_BUDGET_MB: { schema: int(1, 1_024), example: '16' },
} as const;

type Variables = typeof variables;

/** Every variable read here: the deployment files (docker-compose.yml, .env.example) must list each. */
export const ENV_VARIABLES = Object.freeze(Object.keys(variables)) as readonly (keyof Variables)[];

type Parsed = { [K in keyof Variables]?: z.output<Variables[K]['schema']> };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const parsed: Record<string, unknown> = {};
  for (const [name, { schema, example }] of Object.entries(variables)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const result = schema.safeParse(raw);
    if (result.success) parsed[name] = result.data;
    else problems.push(`${name} ${result.error.issues.map((i) => i.message).join('; ')} (example: ${name}=${example})`);
  }
  const v = parsed as Parsed;
  const nodeEnv = v.NODE_ENV ?? 'development';
  const production = nodeEnv === 'production';

  const warnings: string[] = [];
  if (production) {
    for (const name of ['DATABASE_URL', 'STRIPE_WEBHOOK_SECRET', 'STRIPE_SECRET_KEY', 'API_TOKEN', 'ADMIN_TOKEN', 'CHECKOUT_SUCCESS_URL', 'CHECKOUT_CANCEL_URL'] as const) {
      if (env[name] === undefined || env[name] === '') {
        problems.push(`${name} is required when NODE_ENV=production (example: ${name}=${variables[name].example})`);
      }
    }
    problems.push(...productionTokenProblems(v));
    if (v.METRICS_TOKEN === undefined) {
      warnings.push(
        `METRICS_TOKEN is unset, so GET /metrics accepts ADMIN_TOKEN and every Prometheus configuration holds the operator's token: give Prometheus its own (example: METRICS_TOKEN=${variables.METRICS_TOKEN.example})`,
      );
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);

  // Development fills missing secrets from ./.data/dev-secrets.json (generated once), so a
  // fresh clone runs with `npm start` alone and send-event signs with the same secret.
  const needDev = !production && (!v.STRIPE_WEBHOOK_SECRET || !v.API_TOKEN || !v.ADMIN_TOKEN);
  const dev = needDev ? loadDevSecrets() : undefined;
  const port = v.PORT ?? 3000;

  return Object.freeze({
    nodeEnv,
    databaseUrl: v.DATABASE_URL,
    webhookSecrets: Object.freeze(v.STRIPE_WEBHOOK_SECRET ?? [dev!.webhookSecret]),
    stripeSecretKey: v.STRIPE_SECRET_KEY,
    stripeApiBase: v.STRIPE_API_BASE,
    stripeLivemode: /^(sk|rk)_live_/.test(v.STRIPE_SECRET_KEY ?? ''),
    refundPolicy: v.REFUND_POLICY ?? 'full',
    port,
    role: v.ROLE ?? 'all',
    apiToken: v.API_TOKEN ?? dev!.apiToken,
    adminToken: v.ADMIN_TOKEN ?? dev!.adminToken,
    metricsToken: v.METRICS_TOKEN ?? v.ADMIN_TOKEN ?? dev!.adminToken,
    workerConcurrency: v.WORKER_CONCURRENCY ?? 5,
    staleAfterMs: (v.STALE_AFTER_SECONDS ?? 300) * 1000,
    sweepCron: v.SWEEP_CRON ?? '* * * * *',
    maxAttempts: v.MAX_ATTEMPTS ?? 10,
    eventRetentionDays: v.EVENT_RETENTION_DAYS ?? 90,
    shutdownTimeoutMs: (v.SHUTDOWN_TIMEOUT_SECONDS ?? 25) * 1000,
    checkoutSuccessUrl: v.CHECKOUT_SUCCESS_URL ?? `http://localhost:${port}/checkout/success?session_id={CHECKOUT_SESSION_ID}`,
    checkoutCancelUrl: v.CHECKOUT_CANCEL_URL ?? `http://localhost:${port}/checkout/cancel`,
    logLevel: v.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    trustProxyHops: v.TRUST_PROXY ?? 0,
    rateLimitPerMinute: v.RATE_LIMIT_PER_MINUTE ?? 1200,
    devSecretsFile: dev?.file,
    stripeTimeoutMs: (v.STRIPE_TIMEOUT_SECONDS ?? 5) * 1000,
    stripeMaxConcurrentCalls: v.STRIPE_MAX_CONCURRENT_CALLS ?? 8,
    httpRequestTimeoutMs: (v.HTTP_REQUEST_TIMEOUT_SECONDS ?? 30) * 1000,
    webhookBodyBudgetBytes: (v.WEBHOOK_BODY_BUDGET_MB ?? 16) * 1024 * 1024,
    warnings: Object.freeze(warnings),
  });
}

/**
 * Production refuses tokens a person made up, and one token doing two jobs: the API token lives in
 * the selling application, the metrics token in Prometheus, and neither may open /admin (nor
 * Prometheus the API). METRICS_TOKEN may equal ADMIN_TOKEN: unset, it is the admin token.
 */
function productionTokenProblems(v: Parsed): string[] {
  const problems: string[] = [];
  for (const name of ['API_TOKEN', 'ADMIN_TOKEN', 'METRICS_TOKEN'] as const) {
    const value = v[name];
    if (value === undefined) continue;
    const distinct = new Set(value).size;
    if (distinct < TOKEN_MIN_DISTINCT_CHARS) {
      problems.push(`${name} has only ${distinct} different characters; production needs at least ${TOKEN_MIN_DISTINCT_CHARS} (example: ${name}=${variables[name].example})`);
    }
  }
  for (const [name, other] of [['ADMIN_TOKEN', 'API_TOKEN'], ['METRICS_TOKEN', 'API_TOKEN']] as const) {
    if (v[name] !== undefined && v[name] === v[other]) {
      problems.push(`${name} must differ from ${other}: whoever holds one would hold both (example: ${name}=${variables[name].example})`);
    }
  }
  return problems;
}
