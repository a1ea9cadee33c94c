// The only reader of process.env. Everything is validated here, every problem is reported at
// once with an example value, and the result is a frozen object whose field names carry units.
//
// Each setting is one entry of a table (its shape: `Setting`): its variable, check and unit
// conversion, example, default and doc comment together. The core's table is `settings` below; a
// business module declares its own beside its code (src/business-module.ts) and loadConfig reads
// them with the core's, in one pass that reports every problem of both. Config's type is derived
// from the table rather than written beside it, so the two cannot drift apart.
import { z } from 'zod';
import { loadDevSecrets, type DevSecrets } from './dev/dev-secrets.js';
import { devNotificationReceiverUrl } from './dev/notification-receiver.js';
import { DEFAULT_DELIVERY_ATTEMPTS } from './notifications/backoff.js';

const ROLES = ['all', 'web', 'worker'] as const;
type Role = (typeof ROLES)[number];

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

const toMs = (seconds: number) => seconds * 1000;

// Standard Webhooks' secrets: whsec_ and the base64 of the key, which the specification wants
// between 24 and 64 bytes.
const APP_SECRET_MIN_BYTES = 24;
const APP_SECRET_MAX_BYTES = 64;
function isStandardWebhookSecret(secret: string): boolean {
  const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret)?.[1];
  if (!key || key.length % 4 !== 0) return false;
  const bytes = Buffer.from(key, 'base64').length;
  return bytes >= APP_SECRET_MIN_BYTES && bytes <= APP_SECRET_MAX_BYTES;
}

/** An http or https URL (a module's setting may use it too). */
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

// Stripe's signing secrets are `whsec_` and 32 or more base64 characters (the CLI's: 64 hex), its
// API keys `sk_`/`rk_`, the mode and 24 or more. A shorter value is a placeholder or a truncated
// paste, and `whsec_` alone is worse: the webhook then verifies anything signed with the empty key.
// Quotes or spaces are not in any of them: they are a paste from a .env file gone wrong.
const STRIPE_SECRET_MIN_CHARS = 24;
const webhookSecret = z
  .string()
  .regex(new RegExp(`^whsec_[\\w+/=-]{${STRIPE_SECRET_MIN_CHARS},}$`), `each secret must be whsec_ followed by at least ${STRIPE_SECRET_MIN_CHARS} letters or digits, as Stripe shows it`);
const stripeKey = z
  .string()
  .regex(new RegExp(`^(sk|rk)_(test|live)_\\w{${STRIPE_SECRET_MIN_CHARS},}$`), `must be sk_ or rk_, test_ or live_, then at least ${STRIPE_SECRET_MIN_CHARS} letters or digits`);

// Tokens guard money-adjacent routes: short ones are guessable.
// A token travels in an Authorization header, which carries it as one run of visible ASCII: one
// with a space (often a trailing one pasted into a .env file) would never match a request.
const token = z
  .string()
  .min(16, 'must be at least 16 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be letters, digits and punctuation only, without spaces or line breaks (check for a trailing space)');
// In production a token also needs this many different characters: that refuses what a person
// types (`aaaa…`, `passwordpassword`, `changeme-changeme`), never `openssl rand -hex 32` (64 hex
// characters show fewer than 10 of the 16 digits about once in 10^11) nor the development tokens.
const TOKEN_MIN_DISTINCT_CHARS = 10;
const TOKEN_EXAMPLE = 'a long random string (openssl rand -hex 32)';

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

/** A table of settings: the core's below, or a business module's own. */
export type SettingsTable = Readonly<Record<string, Setting>>;

/** Each setting's value: what its schema outputs, undefined when it has no default and is unset. */
export type SettingValues<T extends Readonly<Record<string, { readonly schema: z.ZodType<unknown, string> }>>> = {
  readonly [K in keyof T]: z.output<T[K]['schema']> | (T[K] extends { default: unknown } ? never : undefined);
};

/** A module's table, checked against `Setting` and keeping each entry's own schema type. */
export const defineSettings = <T extends SettingsTable>(table: T): T => table;

/** What loadConfig reads of a business module (src/business-module.ts): its name and its settings. */
export interface SettingsOwner {
  readonly name: string;
  readonly settings?: SettingsTable;
}

const settings = {
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
    schema: z
      .string()
      .transform((s) => s.split(',').map((p) => p.trim()).filter((p) => p !== ''))
      .pipe(z.array(webhookSecret).min(1, 'must list at least one secret'))
      .transform((secrets) => Object.freeze(secrets)),
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
  metricsToken: { env: 'METRICS_TOKEN', schema: token, example: 'a long random string for Prometheus (openssl rand -hex 32)', default: (r: Resolved) => r.adminToken },
  workerConcurrency: { env: 'WORKER_CONCURRENCY', schema: int(1, 100), example: '5', default: '5' },
  /**
   * Slots for the modules' jobs, which call Stripe (src/run-worker.ts): their own, so a
   * Stripe that hangs holds these and never the fulfilment slots of WORKER_CONCURRENCY.
   */
  moduleJobConcurrency: { env: 'MODULE_JOB_CONCURRENCY', schema: int(1, 100), example: '2', default: '2' },
  staleAfterMs: { env: 'STALE_AFTER_SECONDS', schema: int(1, 86_400).transform(toMs), example: '300', default: '300' },
  sweepCron: { env: 'SWEEP_CRON', schema: z.string().regex(/^(\S+\s+){4}\S+$/, 'must have five crontab fields'), example: '* * * * *', default: '* * * * *' },
  /**
   * When the reconcile task lists Stripe's recent events and claims those we lack
   * (src/reconcile/reconcile-events.ts); `off` schedules none (a changed database identity still
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
    schema: z
      .string()
      .transform((s) => s.split(',').map((p) => p.trim()).filter((p) => p !== ''))
      .pipe(z.array(z.url({ protocol: /^https?$/, error: 'each URL must be an http(s) URL' })))
      .refine((urls) => new Set(urls).size === urls.length, 'lists a URL twice')
      // A password in the URL would be stored with every delivery queued for it, and shown
      // wherever the endpoint is; the signature authenticates the sender. (zod runs this check after
      // a failed one too, so it reads only the URLs that parse.)
      .refine((urls) => urls.every((url) => !URL.canParse(url) || (new URL(url).username === '' && new URL(url).password === '')), 'must not carry user:password@ (the signature authenticates each notification)')
      .transform((urls) => Object.freeze(urls)),
    example: 'https://app.example.com/webhooks/stripe-inbox',
    default: (r: Resolved) => (r.nodeEnv === 'development' && r.port !== 0 ? devNotificationReceiverUrl(r.port) : ''),
  },
  /** Signs every notification; several during a rotation, each signature sent. Generated in development. */
  appWebhookSecrets: {
    env: 'APP_WEBHOOK_SECRET',
    schema: z
      .string()
      .transform((s) => s.split(',').map((p) => p.trim()).filter((p) => p !== ''))
      .pipe(z.array(z.string().refine(isStandardWebhookSecret, `each secret must be whsec_ followed by the base64 of ${APP_SECRET_MIN_BYTES} to ${APP_SECRET_MAX_BYTES} random bytes`)))
      .transform((secrets) => Object.freeze(secrets)),
    example: 'whsec_<base64 of 32 random bytes: openssl rand -base64 32>',
    default: (r: Resolved) => (r.appWebhookUrls.length > 0 && r.nodeEnv !== 'production' ? r.devSecrets().appWebhookSecret : ''),
  },
  appWebhookTimeoutMs: { env: 'APP_WEBHOOK_TIMEOUT_SECONDS', schema: int(1, 60).transform(toMs), example: '10', default: '10' },
  /** Attempts per endpoint before a notification is 'failed'; the default spans about 3 days (src/notifications/backoff.ts). */
  appWebhookMaxAttempts: { env: 'APP_WEBHOOK_MAX_ATTEMPTS', schema: int(1, 100), example: String(DEFAULT_DELIVERY_ATTEMPTS), default: String(DEFAULT_DELIVERY_ATTEMPTS) },
  /** Delivery jobs at once in this process (each sends up to DELIVERIES_PER_JOB at once), on their own runner and pool: a slow app holds these only. */
  appWebhookConcurrency: { env: 'APP_WEBHOOK_CONCURRENCY', schema: int(1, 100), example: '4', default: '4' },
} as const;

type Settings = SettingValues<typeof settings>;

export interface Config extends Settings {
  /** The mode of STRIPE_SECRET_KEY (sk_live_/rk_live_): events of the other mode never act. */
  readonly stripeLivemode: boolean;
  /** Where the development secrets came from, so start-up can print how to use them. */
  readonly devSecretsFile: string | undefined;
  /** What is allowed but unwise (e.g. no METRICS_TOKEN in production): main.ts logs each at start-up. */
  readonly warnings: readonly string[];
  /**
   * Each business module's own settings, by module name, read from its table: the core holds them
   * for the module and never reads them (src/business-module.ts hands each module its own).
   */
  readonly moduleSettings: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

interface Entry {
  /** The module whose table lists it; undefined for the core's. */
  readonly owner: string | undefined;
  readonly key: string;
  readonly setting: Setting;
}

/**
 * The core's entries, then each module's, in order. A variable several modules use (the refund
 * policy, Checkout's return pages) is one entry, declared once where it is owned and listed in the
 * table of each module that uses it: it is read once and given to each. Two different entries for
 * one variable are a mistake in the code, refused before anything is read.
 */
function entriesOf(modules: readonly SettingsOwner[]): { entries: Entry[]; distinct: Setting[] } {
  const tables: Array<[string | undefined, SettingsTable]> = [[undefined, settings], ...modules.map((m): [string, SettingsTable] => [m.name, m.settings ?? {}])];
  const entries = tables.flatMap(([owner, table]) => Object.entries(table).map(([key, setting]) => ({ owner, key, setting })));
  const byEnv = new Map<string, Entry>();
  for (const entry of entries) {
    const first = byEnv.get(entry.setting.env);
    if (first && first.setting !== entry.setting) {
      const by = ({ owner, key }: Entry) => `${owner ?? 'the core'} (${key})`;
      throw new Error(`${entry.setting.env} is declared twice, by ${by(first)} and by ${by(entry)}: declare it once and list that entry in both tables`);
    }
    if (!first) byEnv.set(entry.setting.env, entry);
  }
  return { entries, distinct: [...byEnv.values()].map((entry) => entry.setting) };
}

/** Every variable the service reads (the core's, then each module's): docker-compose.yml and .env.example must list each. */
export function envVariables(modules: readonly SettingsOwner[] = []): readonly string[] {
  return Object.freeze(entriesOf(modules).distinct.map((setting) => setting.env));
}

const exampleOf = ({ env, example }: Setting) => `(example: ${env}=${example})`;

/**
 * The service's configuration from `env`: the core's settings and those of `modules` (the
 * business modules the process runs; none for an ops script, which runs no module code).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, modules: readonly SettingsOwner[] = []): Config {
  const { entries, distinct } = entriesOf(modules);
  const isSet = (name: string) => env[name] !== undefined && env[name] !== '';
  const problems: string[] = [];
  const parsed = new Map<Setting, unknown>();
  for (const setting of distinct) {
    if (!isSet(setting.env)) continue;
    const result = setting.schema.safeParse(env[setting.env]);
    if (result.success) parsed.set(setting, result.data);
    else problems.push(`${setting.env} ${result.error.issues.map((i) => i.message).join('; ')} ${exampleOf(setting)}`);
  }
  // <Setting>: the compiler checks every entry against the shape this function reads.
  const core = Object.entries<Setting>(settings);
  const given = Object.fromEntries(core.flatMap(([key, setting]) => (parsed.has(setting) ? [[key, parsed.get(setting)]] : []))) as Partial<Settings>;
  const production = given.nodeEnv === 'production';

  const warnings: string[] = [];
  if (production) {
    const missing = distinct.filter((s) => s.requiredInProduction && !isSet(s.env));
    problems.push(...missing.map((s) => `${s.env} is required when NODE_ENV=production ${exampleOf(s)}`));
    problems.push(...productionTokenProblems(given));
    problems.push(...productionEndpointProblems(given));
    if (given.metricsToken === undefined) {
      warnings.push(
        `METRICS_TOKEN is unset, so GET /metrics accepts ADMIN_TOKEN and every Prometheus configuration holds the operator's token: give Prometheus its own ${exampleOf(settings.metricsToken)}`,
      );
    }
  }
  if (isSet(settings.appWebhookUrls.env) && !isSet(settings.appWebhookSecrets.env) && production) {
    problems.push(`APP_WEBHOOK_SECRET is required when APP_WEBHOOK_URL is set: the app verifies every notification with it ${exampleOf(settings.appWebhookSecrets)}`);
  }
  // Without DATABASE_URL, development runs the embedded Postgres, to which no other URL leads.
  if (isSet(settings.databaseDirectUrl.env) && !isSet(settings.databaseUrl.env)) {
    problems.push(`DATABASE_DIRECT_URL is set without DATABASE_URL: it is the direct way to DATABASE_URL's database ${exampleOf(settings.databaseUrl)}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);

  // Development fills missing secrets from ./.data/dev-secrets.json (generated once), so a fresh
  // clone runs with `npm start` alone and send-event signs with the same secret. Production never
  // asks: it has refused to start without them.
  let dev: DevSecrets | undefined;
  const devSecrets = () => (dev ??= loadDevSecrets());
  const values: Record<string, unknown> = {};
  const valueOf = (setting: Setting): unknown => {
    const fallback = setting.default;
    if (parsed.has(setting) || fallback === undefined) return parsed.get(setting);
    return setting.schema.parse(typeof fallback === 'string' ? fallback : fallback({ ...values, devSecrets } as Resolved));
  };
  for (const [key, setting] of core) values[key] = valueOf(setting);
  // The modules' settings after every core one, so that their defaults may follow any (PORT).
  const moduleValues = new Map<Setting, unknown>();
  const moduleSettings: Record<string, Record<string, unknown>> = Object.fromEntries(modules.map((m) => [m.name, {}]));
  for (const { owner, key, setting } of entries) {
    if (owner === undefined) continue;
    if (!moduleValues.has(setting)) moduleValues.set(setting, valueOf(setting));
    moduleSettings[owner]![key] = moduleValues.get(setting);
  }
  const config = values as Settings;
  return Object.freeze({
    ...config,
    stripeLivemode: /^(sk|rk)_live_/.test(config.stripeSecretKey ?? ''),
    devSecretsFile: dev?.file,
    warnings: Object.freeze(warnings),
    moduleSettings: Object.freeze(Object.fromEntries(Object.entries(moduleSettings).map(([name, values]) => [name, Object.freeze(values)]))),
  });
}

/**
 * Notifications carry balances and order ids: production sends them over TLS, except to a
 * receiver on the same host (a sidecar, the loopback interface), which never leaves the machine.
 */
function productionEndpointProblems(given: Partial<Settings>): string[] {
  const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);
  return (given.appWebhookUrls ?? [])
    .filter((url) => new URL(url).protocol !== 'https:' && !loopback.has(new URL(url).hostname))
    .map((url) => `APP_WEBHOOK_URL ${new URL(url).origin} must be https:// when NODE_ENV=production (http only to localhost) ${exampleOf(settings.appWebhookUrls)}`);
}

/**
 * Production refuses tokens a person made up, and one token doing two jobs: the API token lives in
 * the selling application, the metrics token in Prometheus, and neither may open /admin (nor
 * Prometheus the API). METRICS_TOKEN may equal ADMIN_TOKEN: unset, it is the admin token.
 */
function productionTokenProblems(given: Partial<Settings>): string[] {
  const problems: string[] = [];
  for (const key of ['apiToken', 'adminToken', 'metricsToken'] as const) {
    const value = given[key];
    if (value === undefined) continue;
    const distinct = new Set(value).size;
    if (distinct < TOKEN_MIN_DISTINCT_CHARS) {
      problems.push(`${settings[key].env} has only ${distinct} different characters; production needs at least ${TOKEN_MIN_DISTINCT_CHARS} ${exampleOf(settings[key])}`);
    }
  }
  for (const [key, other] of [['adminToken', 'apiToken'], ['metricsToken', 'apiToken']] as const) {
    if (given[key] !== undefined && given[key] === given[other]) {
      problems.push(`${settings[key].env} must differ from ${settings[other].env}: whoever holds one would hold both ${exampleOf(settings[key])}`);
    }
  }
  return problems;
}
