// Starts the real service wiring (src/service.ts) on a test database, with the fake Stripe
// (the offline stand-in with its test hooks) behind STRIPE_API_BASE, on a random port.
import { after, before } from 'node:test';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openServicePools, type ServicePools } from '../../src/db/pools.js';
import { businessModules, loadServiceConfig } from '../../src/modules/index.js';
import { startService, type Service } from '../../src/service.js';
import type { WorkerOptions } from '../../src/worker/start-worker.js';
import type { DatabaseUrls } from '../../src/db/connection-pooler.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { startOfflineStripe, type OfflineStripe } from '../../src/dev/offline-stripe/index.js';
import { signDelivery } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { checkResponse } from './openapi.js';

export const WEBHOOK_SECRET = 'whsec_test_current_0123456789abcdef';
export const PREVIOUS_WEBHOOK_SECRET = 'whsec_test_previous_0123456789abcdef';
/** Never called: STRIPE_API_BASE points at the offline stand-in. */
export const STRIPE_SECRET_KEY = 'sk_test_offline_0123456789abcdef';
export const API_TOKEN = 'test-api-token-0123456789';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** The service's configuration in tests: test secrets, a random port, quiet logs; `env` on top. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadServiceConfig({
    NODE_ENV: 'test',
    STRIPE_WEBHOOK_SECRET: `${WEBHOOK_SECRET},${PREVIOUS_WEBHOOK_SECRET}`,
    STRIPE_SECRET_KEY,
    API_TOKEN,
    ADMIN_TOKEN,
    PORT: '0',
    SHUTDOWN_TIMEOUT_SECONDS: '2',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
}

export interface TestService extends Service {
  readonly config: Config;
  /** The service's own connection pools (intake, api, worker). */
  readonly pools: ServicePools;
  readonly stripe: OfflineStripe;
  /** Signs and POSTs an event as one Stripe delivery attempt. */
  deliver(event: unknown, options?: { secret?: string; timestamp?: number }): Promise<HttpReply>;
  /** Calls /api or /admin/api with the right bearer token. */
  call(method: string, path: string, options?: { body?: unknown; headers?: Record<string, string>; token?: string | null }): Promise<HttpReply>;
  close(): Promise<void>;
}

export interface HttpReply {
  status: number;
  body: Record<string, unknown>;
}

export async function startTestService(
  database: TestDatabase,
  options: {
    env?: Record<string, string>;
    stripe?: OfflineStripe;
    /** Where the service's pools connect, when not straight to `database` (a relay or a pooler in front of it). */
    databaseUrl?: string | DatabaseUrls;
    queryDeadlineMs?: number;
    workerOptions?: WorkerOptions;
  } = {},
): Promise<TestService> {
  const stripe = options.stripe ?? (await startOfflineStripe());
  const config = testConfig({ DATABASE_URL: database.url, STRIPE_API_BASE: stripe.url, ...options.env });
  const logger = createLogger(config.logLevel);
  // The service's own pools on the test's database, as main.ts opens them.
  const pools = openServicePools(options.databaseUrl ?? database.url, {
    ...config,
    ...(options.queryDeadlineMs !== undefined && { queryDeadlineMs: options.queryDeadlineMs }),
  });
  const sdk = createStripeClient(STRIPE_SECRET_KEY, stripe.url, { timeoutMs: config.stripeTimeoutMs });
  const service = await startService({
    config,
    pools,
    stripe: sdk,
    modules: businessModules,
    logger,
    ...(options.workerOptions && { workerOptions: options.workerOptions }),
  });

  // Every answer is held to docs/openapi.json where it describes the route (support/openapi.ts).
  const request = async (path: string, init: RequestInit): Promise<HttpReply> => {
    const response = await fetch(service.url + path, init);
    const text = await response.text();
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    checkResponse(init.method ?? 'GET', path, response.status, body);
    return { status: response.status, body };
  };

  return {
    ...service,
    config,
    pools,
    stripe,
    deliver(event, { secret = WEBHOOK_SECRET, timestamp } = {}) {
      const { body, headers } = signDelivery(event, secret, timestamp === undefined ? {} : { timestamp });
      // A thin body the tests send must be one Stripe's own SDK takes for a thin notification.
      if ((event as { object?: unknown }).object === 'v2.core.event') sdk.parseEventNotificationWithoutVerification(body);
      return request('/webhooks/stripe', { method: 'POST', body, headers });
    },
    call(method, path, { body, headers = {}, token } = {}) {
      const bearer = token === undefined ? (path.startsWith('/admin') ? ADMIN_TOKEN : API_TOKEN) : token;
      return request(path, {
        method,
        headers: {
          ...(bearer !== null && { authorization: `Bearer ${bearer}` }),
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    },
    async close() {
      await service.stop();
      // Before the pools: a job still waiting on Stripe then fails while its pool can record it.
      if (!options.stripe) await stripe.close();
      await pools.close();
    },
  };
}

export interface FileService {
  readonly database: TestDatabase;
  readonly service: TestService;
}

/** A fresh database and the service on it for one test file: made before its tests, closed after. */
export function serviceForFile(options: { env?: Record<string, string> } = {}): FileService {
  const file = {} as { database: TestDatabase; service: TestService };
  before(async () => {
    file.database = await createTestDatabase();
    file.service = await startTestService(file.database, options);
  });
  after(async () => {
    await file.service?.close();
    await file.database?.close();
  });
  return file;
}

/** Signs in to the dashboard as a browser does; the session cookie, as a Cookie header sends it. */
export async function signIn(service: { url: string }, token = ADMIN_TOKEN): Promise<string> {
  const response = await fetch(`${service.url}/admin/login`, { method: 'POST', body: new URLSearchParams({ token }), redirect: 'manual' });
  const cookie = response.headers.get('set-cookie')?.split(';')[0];
  if (response.status !== 303 || !cookie) throw new Error(`signing in answered ${response.status}`);
  return cookie;
}
