// The environment the bench gives the service: test mode, bench-only secrets, Stripe unreachable
// (nothing measured here calls Stripe), the image's NODE_OPTIONS, and whatever the user adds with
// --env KEY=VALUE. A NODE_OPTIONS given with --env comes after the image's: it adds a flag
// (--cpu-prof) or, for a flag both name, wins (node takes the last).
import { imageNodeOptions } from './compiled-service.js';

export const BENCH_WEBHOOK_SECRET = 'whsec_bench_0123456789abcdef0123';
export const BENCH_TOKEN = 'bench-token-0123456789abcdef';
/** Signs the outcome notifications (APP_WEBHOOK_SECRET): Standard Webhooks' whsec_ and the base64 of 32 bytes. */
export const BENCH_APP_WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 'bench-notification-secret').toString('base64')}`;

export function serviceEnv(databaseUrl: string, role: 'all' | 'web' | 'worker', extra: Record<string, string>): Record<string, string> {
  return {
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    ROLE: role,
    STRIPE_WEBHOOK_SECRET: BENCH_WEBHOOK_SECRET,
    STRIPE_SECRET_KEY: 'sk_test_offline_0123456789abcdef',
    STRIPE_API_BASE: 'http://127.0.0.1:9',
    API_TOKEN: BENCH_TOKEN,
    ADMIN_TOKEN: BENCH_TOKEN,
    PORT: '0',
    // scripts/dev/spawn-service.ts learns the URL from the 'stripe-inbox started' line, an info
    // line: a quieter level would never be seen as started. See docs/benchmarks.md, "Known limits
    // of the bench".
    LOG_LEVEL: 'info',
    SHUTDOWN_TIMEOUT_SECONDS: '5',
    ...extra,
    NODE_OPTIONS: [imageNodeOptions(), extra.NODE_OPTIONS ?? ''].join(' ').trim(),
  };
}
