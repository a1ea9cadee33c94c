// What production refuses, or warns about, beyond each variable's own check: a secret left to its
// development default, a token a person made up or doing two jobs, a notification sent in clear.
import { TOKEN_MIN_DISTINCT_CHARS } from './parsers.js';
import { exampleOf, settings, type Setting, type Settings } from './settings.js';

/** The problems and warnings of a production configuration: `given` are the variables set, `unset` the settings not set. */
export function productionChecks(given: Partial<Settings>, unset: readonly Setting[]): { problems: string[]; warnings: string[] } {
  const missing = unset.filter((s) => s.requiredInProduction);
  const problems = [
    ...missing.map((s) => `${s.env} is required when NODE_ENV=production ${exampleOf(s)}`),
    ...productionTokenProblems(given),
    ...productionEndpointProblems(given),
  ];
  const warnings: string[] = [];
  if (given.metricsToken === undefined) {
    warnings.push(
      `METRICS_TOKEN is unset, so GET /metrics accepts ADMIN_TOKEN and every Prometheus configuration holds the operator's token: give Prometheus its own ${exampleOf(settings.metricsToken)}`,
    );
  }
  return { problems, warnings };
}

/**
 * Notifications carry balances and order ids: production sends them over TLS, except to a
 * receiver on the same host (a sidecar, the loopback interface), which never leaves the machine.
 */
function productionEndpointProblems(given: Partial<Settings>): string[] {
  const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);
  return (given.appWebhookUrls ?? [])
    .filter((url) => new URL(url).protocol !== 'https:' && !loopback.has(new URL(url).hostname))
    .map(
      (url) =>
        `APP_WEBHOOK_URL ${new URL(url).origin} must be https:// when NODE_ENV=production (http only to localhost) ${exampleOf(settings.appWebhookUrls)}`,
    );
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
      problems.push(
        `${settings[key].env} has only ${distinct} different characters; production needs at least ${TOKEN_MIN_DISTINCT_CHARS} ${exampleOf(settings[key])}`,
      );
    }
  }
  for (const [key, other] of [
    ['adminToken', 'apiToken'],
    ['metricsToken', 'apiToken'],
  ] as const) {
    if (given[key] !== undefined && given[key] === given[other]) {
      problems.push(`${settings[key].env} must differ from ${settings[other].env}: whoever holds one would hold both ${exampleOf(settings[key])}`);
    }
  }
  return problems;
}
