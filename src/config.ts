// The only reader of process.env. Everything is validated here, every problem is reported at
// once with an example value, and the result is a frozen object whose field names carry units.
//
// Each setting is one entry of a table (its shape: `Setting`): its variable, check and unit
// conversion, example, default and doc comment together. The core's table is src/config/settings.ts;
// a business module declares its own beside its code (src/business-module.ts) and loadConfig reads
// them with the core's, in one pass that reports every problem of both.
import { loadDevSecrets, type DevSecrets } from './dev/dev-secrets.js';
import { productionChecks } from './config/production-checks.js';
import { exampleOf, settings, type Resolved, type Setting, type Settings } from './config/settings.js';
import { entriesOf, type SettingsOwner } from './config/tables.js';

export { httpUrl } from './config/parsers.js';
export type { Setting, SettingValues } from './config/settings.js';
export { defineSettings, envVariables, type SettingsTable } from './config/tables.js';

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

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
    const checked = productionChecks(
      given,
      distinct.filter((s) => !isSet(s.env)),
    );
    problems.push(...checked.problems);
    warnings.push(...checked.warnings);
  }
  if (isSet(settings.appWebhookUrls.env) && !isSet(settings.appWebhookSecrets.env) && production) {
    problems.push(
      `APP_WEBHOOK_SECRET is required when APP_WEBHOOK_URL is set: the app verifies every notification with it ${exampleOf(settings.appWebhookSecrets)}`,
    );
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
