// The core's settings: one entry per environment variable, its check and unit conversion, example,
// default and doc comment together (an entry's shape: `Setting`). Config's type is derived from
// this table rather than written beside it, so the two cannot drift apart; `Setting` and
// `Resolved` live here with it because each needs the other's type.
import { z } from 'zod';
import type { DevSecrets } from '../dev/dev-secrets.js';
import { devNotificationReceiverUrl } from '../dev/notification-receiver.js';
import { DEFAULT_DELIVERY_ATTEMPTS } from '../notifications/backoff.js';
import {
  appWebhookSecrets,
  appWebhookUrls,
  httpUrl,
  int,
  keyValueList,
  otlpProtocol,
  stripeKey,
  toMs,
  token,
  TOKEN_EXAMPLE,
  webhookSecrets,
} from './parsers.js';

const ROLES = ['all', 'web', 'worker'] as const;
type Role = (typeof ROLES)[number];

/** One environment variable and the field it sets (the entry's key in its table). */
export interface Setting {
  readonly env: string;
  /** Checks the variable and converts it to the field's type and unit. */
  readonly schema: z.ZodType<unknown, string>;
  /** Shown with every problem of the variable. */
  readonly example: string;
  /** For an unset or empty variable, written as the variable would be: the schema parses it too. None: undefined. */
  readonly default?: string | ((r: Resolved) => string);
  /** Production refuses to start without it; a default serves development and tests. */
  readonly requiredInProduction?: true;
}

// An interface rather than a type alias, and read as `r.port` rather than destructured: either of
// those would make TypeScript need the table's type to compute the table's type (a circularity error).
/**
 * What a computed default reads: the core's settings above its entry (resolved in table order; a
 * module's setting sees all of them), and the development secrets.
 */
export interface Resolved extends Settings {
  readonly devSecrets: () => DevSecrets;
}

/** Each setting's value: what its schema outputs, undefined when it has no default and is unset. */
export type SettingValues<T extends Readonly<Record<string, { readonly schema: z.ZodType<unknown, string> }>>> = {
  readonly [K in keyof T]: z.output<T[K]['schema']> | (T[K] extends { default: unknown } ? never : undefined);
};

/** How every problem of a setting ends. */
export const exampleOf = ({ env, example }: Setting) => `(example: ${env}=${example})`;

export const settings = {
  nodeEnv: { env: 'NODE_ENV', schema: z.enum(['development', 'production', 'test']), example: 'production', default: 'development' },
  /** Unset in development: main.ts then starts an embedded Postgres under ./.data. */
  databaseUrl: {
    env: 'DATABASE_URL',
    schema: z.string().regex(/^postgres(ql)?:\/\//, 'must start with postgres://'),
    example: 'postgres://user:pass@db:5432/stripe_inbox',
    requiredInProduction: true,
  },
  /**
   * A direct or session-mode URL to DATABASE_URL's database, for what needs a session: the
   * worker's LISTEN, the migrations' advisory lock, the scripts. Required when DATABASE_URL goes
   * through a pooler in transaction mode, which start-up finds out (src/db/connection-pooler.ts).
   */
  databaseDirectUrl: {
    env: 'DATABASE_DIRECT_URL',
    schema: z.string().regex(/^postgres(ql)?:\/\//, 'must start with postgres://'),
    example: 'postgres://user:pass@db.internal:5432/stripe_inbox',
  },
  /** Several during a rotation: an event is accepted if any of them verifies its signature. */
  webhookSecrets: {
    env: 'STRIPE_WEBHOOK_SECRET',
    schema: webhookSecrets,
    example: 'whsec_<32+ characters from the endpoint’s page>,whsec_<the previous one, during a rotation>',
    default: (r: Resolved) => r.devSecrets().webhookSecret,
    requiredInProduction: true,
  },
  /** Unset in development: main.ts then starts the offline Stripe stand-in. */
  stripeSecretKey: { env: 'STRIPE_SECRET_KEY', schema: stripeKey, example: 'sk_live_<the key from the dashboard’s API keys page>', requiredInProduction: true },
  stripeApiBase: { env: 'STRIPE_API_BASE', schema: httpUrl, example: 'http://localhost:12111' },
  port: { env: 'PORT', schema: int(0, 65535), example: '3000', default: '3000' },
  role: { env: 'ROLE', schema: z.enum(ROLES), example: 'web', default: 'all' satisfies Role },
  apiToken: { env: 'API_TOKEN', schema: token, example: TOKEN_EXAMPLE, default: (r: Resolved) => r.devSecrets().apiToken, requiredInProduction: true },
  adminToken: { env: 'ADMIN_TOKEN', schema: token, example: TOKEN_EXAMPLE, default: (r: Resolved) => r.devSecrets().adminToken, requiredInProduction: true },
  /** Bearer token for GET /metrics; ADMIN_TOKEN when unset. */
  metricsToken: {
    env: 'METRICS_TOKEN',
    schema: token,
    example: 'a long random string for Prometheus (openssl rand -hex 32)',
    default: (r: Resolved) => r.adminToken,
  },
  workerConcurrency: { env: 'WORKER_CONCURRENCY', schema: int(1, 100), example: '5', default: '5' },
  /**
   * Slots for the modules' jobs, which call Stripe (src/worker/module-jobs-runner.ts): their own, so a
   * Stripe that hangs holds these and never the fulfilment slots of WORKER_CONCURRENCY.
   */
  moduleJobConcurrency: { env: 'MODULE_JOB_CONCURRENCY', schema: int(1, 100), example: '2', default: '2' },
  staleAfterMs: { env: 'STALE_AFTER_SECONDS', schema: int(1, 86_400).transform(toMs), example: '300', default: '300' },
  sweepCron: { env: 'SWEEP_CRON', schema: z.string().regex(/^(\S+\s+){4}\S+$/, 'must have five crontab fields'), example: '* * * * *', default: '* * * * *' },
  /**
   * When the reconcile task lists Stripe's recent events and claims those we lack
   * (src/maintenance/reconcile.ts); `off` schedules none (a changed database identity still
   * starts one). Hourly off the hour by default: a lost event then waits at most an hour.
   */
  reconcileCron: {
    env: 'RECONCILE_CRON',
    schema: z.string().regex(/^(off|(\S+\s+){4}\S+)$/, 'must have five crontab fields, or be off'),
    example: '17 * * * *',
    default: '17 * * * *',
  },
  /** How far back each reconcile lists: Stripe retries a delivery for 3 days (72 h); its Events API keeps 30 days (720 h). */
  reconcileWindowMs: { env: 'RECONCILE_WINDOW_HOURS', schema: int(1, 720).transform((hours) => hours * 3_600_000), example: '72', default: '72' },
  /** Stripe list calls (pages of 100 events) one scheduled or triggered reconcile makes at most. */
  reconcileMaxCalls: { env: 'RECONCILE_MAX_CALLS', schema: int(1, 10_000), example: '50', default: '50' },
  /** The reconcile's pace, per process: its list calls spend at most this much of the account's Stripe rate limit. */
  reconcileCallsPerSecond: { env: 'RECONCILE_CALLS_PER_SECOND', schema: int(1, 100), example: '5', default: '5' },
  /**
   * An event's attempts, handler failures and reclaims together, counted on its row; the row
   * decides when it is a dead letter. Its fulfilment job is given the same limit.
   */
  maxAttempts: { env: 'MAX_ATTEMPTS', schema: int(1, 100), example: '10', default: '10' },
  /**
   * At least 31: Stripe resends events for up to 30 days, and pruning sooner would let a late
   * resend through the event-id claim (business idempotency still holds, but audit is lost).
   */
  eventRetentionDays: { env: 'EVENT_RETENTION_DAYS', schema: int(31, 36_500), example: '90', default: '90' },
  shutdownTimeoutMs: { env: 'SHUTDOWN_TIMEOUT_SECONDS', schema: int(1, 3_600).transform(toMs), example: '25', default: '25' },
  /**
   * Proxies in front of the service (Traefik: 1); 0 reads the client IP from the socket. A hop
   * count, not `true`: trusting every X-Forwarded-For entry lets any client pick its IP.
   */
  trustProxyHops: {
    env: 'TRUST_PROXY',
    schema: z
      .string()
      .regex(/^(false|\d{1,2})$/, 'must be false or the number of proxies in front (1 behind Traefik)')
      .transform((v) => (v === 'false' ? 0 : Number(v)))
      .pipe(z.number().int().max(10, 'must be at most 10 proxies')),
    example: '1',
    default: '0',
  },
  /** Per client IP: /api requests; /admin gets a quarter, rejected webhooks half; 0 is off. */
  rateLimitPerMinute: { env: 'RATE_LIMIT_PER_MINUTE', schema: int(0, 1_000_000), example: '1200', default: '1200' },
  /** One of pino's levels, typed as the string createLogger takes. */
  logLevel: {
    env: 'LOG_LEVEL',
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) as z.ZodType<string, string>,
    example: 'info',
    default: (r: Resolved) => (r.nodeEnv === 'test' ? 'silent' : 'info'),
  },
  /** Per attempt of an outbound Stripe call (the SDK retries once). */
  stripeTimeoutMs: { env: 'STRIPE_TIMEOUT_SECONDS', schema: int(1, 60).transform(toMs), example: '5', default: '5' },
  /** Outbound Stripe calls in flight at once in this process; more are answered 503. */
  stripeMaxConcurrentCalls: { env: 'STRIPE_MAX_CONCURRENT_CALLS', schema: int(1, 1_000), example: '8', default: '8' },
  /**
   * The worker's fetches for thin notifications (src/fulfilment/thin-fetch.ts), per process: a
   * backlog of thin events spends at most this much of the account's Stripe rate limit.
   */
  stripeFetchesPerSecond: { env: 'STRIPE_FETCHES_PER_SECOND', schema: int(1, 1_000), example: '10', default: '10' },
  /** Longest an HTTP request may take to arrive, headers and body. */
  httpRequestTimeoutMs: { env: 'HTTP_REQUEST_TIMEOUT_SECONDS', schema: int(1, 300).transform(toMs), example: '30', default: '30' },
  /** Bytes of not yet verified webhook bodies held at once; beyond it deliveries get 503. */
  webhookBodyBudgetBytes: { env: 'WEBHOOK_BODY_BUDGET_MB', schema: int(1, 1_024).transform((mb) => mb * 1024 * 1024), example: '16', default: '16' },
  /**
   * Where outcome notifications go (docs/notifications.md); each URL gets every one. None: no
   * notification is written. Development delivers to the service's own receiver, which logs them.
   */
  appWebhookUrls: {
    env: 'APP_WEBHOOK_URL',
    schema: appWebhookUrls,
    example: 'https://app.example.com/webhooks/stripe-inbox',
    default: (r: Resolved) => (r.nodeEnv === 'development' && r.port !== 0 ? devNotificationReceiverUrl(r.port) : ''),
  },
  /** Signs every notification; several during a rotation, each signature sent. Generated in development. */
  appWebhookSecrets: {
    env: 'APP_WEBHOOK_SECRET',
    schema: appWebhookSecrets,
    example: 'whsec_<base64 of 32 random bytes: openssl rand -base64 32>',
    default: (r: Resolved) => (r.appWebhookUrls.length > 0 && r.nodeEnv !== 'production' ? r.devSecrets().appWebhookSecret : ''),
  },
  appWebhookTimeoutMs: { env: 'APP_WEBHOOK_TIMEOUT_SECONDS', schema: int(1, 60).transform(toMs), example: '10', default: '10' },
  /** Attempts per endpoint before a notification is 'failed'; the default spans about 3 days (src/notifications/backoff.ts). */
  appWebhookMaxAttempts: {
    env: 'APP_WEBHOOK_MAX_ATTEMPTS',
    schema: int(1, 100),
    example: String(DEFAULT_DELIVERY_ATTEMPTS),
    default: String(DEFAULT_DELIVERY_ATTEMPTS),
  },
  /** Delivery batches in flight at once in this process (each sends up to DELIVERIES_PER_BATCH at once, src/notifications/delivery-pump.ts), on their own pool: a slow app holds these only. */
  appWebhookConcurrency: { env: 'APP_WEBHOOK_CONCURRENCY', schema: int(1, 100), example: '4', default: '4' },
  // OpenTelemetry's own variables (docs/operations.md, "Tracing"). The SDK reads them itself once
  // it is loaded; they are declared here so that a mistake stops start-up with the others, and
  // the first four decide whether it is loaded at all (src/tracing/start-tracing.ts).
  /** `true` keeps tracing off whatever else is set. */
  otelSdkDisabled: { env: 'OTEL_SDK_DISABLED', schema: z.enum(['true', 'false']).transform((v) => v === 'true'), example: 'true', default: 'false' },
  /** `otlp` or `console` turns tracing on; `none` off. Unset: on when an OTLP endpoint is set. */
  otelTracesExporter: { env: 'OTEL_TRACES_EXPORTER', schema: z.enum(['otlp', 'console', 'none']), example: 'otlp' },
  otelExporterOtlpEndpoint: { env: 'OTEL_EXPORTER_OTLP_ENDPOINT', schema: httpUrl, example: 'http://otel-collector:4318' },
  otelExporterOtlpTracesEndpoint: { env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', schema: httpUrl, example: 'http://otel-collector:4318/v1/traces' },
  /** The exporter sends OTLP as JSON over HTTP, and only that (the traces-only variable wins, as the SDK has it). */
  otelExporterOtlpProtocol: { env: 'OTEL_EXPORTER_OTLP_PROTOCOL', schema: otlpProtocol, example: 'http/json' },
  otelExporterOtlpTracesProtocol: { env: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', schema: otlpProtocol, example: 'http/json' },
  /** Sent with every export, e.g. a collector's API key: never logged. */
  otelExporterOtlpHeaders: { env: 'OTEL_EXPORTER_OTLP_HEADERS', schema: keyValueList, example: 'api-key=<the collector’s key>' },
  otelExporterOtlpTracesHeaders: { env: 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', schema: keyValueList, example: 'api-key=<the collector’s key>' },
  /** How long one export may take, in milliseconds (the SDK's default: 10000); spans of an export that times out are dropped, never the service's work. */
  otelExporterOtlpTimeout: { env: 'OTEL_EXPORTER_OTLP_TIMEOUT', schema: int(1, 600_000), example: '10000' },
  otelExporterOtlpTracesTimeout: { env: 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', schema: int(1, 600_000), example: '10000' },
  otelExporterOtlpCompression: { env: 'OTEL_EXPORTER_OTLP_COMPRESSION', schema: z.enum(['gzip', 'none']), example: 'gzip' },
  otelExporterOtlpTracesCompression: { env: 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION', schema: z.enum(['gzip', 'none']), example: 'gzip' },
  otelServiceName: { env: 'OTEL_SERVICE_NAME', schema: z.string().min(1), example: 'stripe-inbox', default: 'stripe-inbox' },
  otelResourceAttributes: { env: 'OTEL_RESOURCE_ATTRIBUTES', schema: keyValueList, example: 'deployment.environment.name=production' },
  otelTracesSampler: {
    env: 'OTEL_TRACES_SAMPLER',
    schema: z.enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio']),
    example: 'parentbased_traceidratio',
  },
  /** The ratio of traces kept by a `traceidratio` sampler. */
  otelTracesSamplerArg: {
    env: 'OTEL_TRACES_SAMPLER_ARG',
    schema: z
      .string()
      .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a ratio from 0 to 1')
      .transform(Number),
    example: '0.1',
  },
} as const;

export type Settings = SettingValues<typeof settings>;
