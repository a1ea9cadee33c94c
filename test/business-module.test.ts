// defineModule: a module's code is given its own settings and the few core services it needs,
// never the service's Config, which holds every secret (src/business-module.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Router } from 'express';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { defineModule, defineSettings, type RouteContext, type TaskContext } from '../src/business-module.js';
import { loadConfig, type Config } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import type { Logger } from '../src/logger.js';
import type { Notifications } from '../src/notifications/outbox.js';
import type { StripeCalls } from '../src/stripe/stripe-calls.js';

const SECRETS = {
  NODE_ENV: 'test',
  STRIPE_WEBHOOK_SECRET: 'whsec_test_module_0123456789abcdef',
  API_TOKEN: 'test-api-token-0123456789',
  ADMIN_TOKEN: 'test-admin-token-0123456789',
};
const settings = defineSettings({ probeLimit: { env: 'PROBE_LIMIT', schema: z.string().transform(Number), example: '7', default: '3' } });

/** A module that records what each of its parts was given. */
function probe() {
  const given: Record<string, unknown> = {};
  const module = defineModule({
    name: 'probe',
    settings,
    handlers: (own, context) => ((given.handlers = { settings: own, ...context }), {}),
    tasks: (context) => ((given.tasks = context), {}),
    apiRoutes: (context) => ((given.apiRoutes = context), Router()),
    adminRoutes: (context) => ((given.adminRoutes = context), Router()),
  });
  return { module, given };
}

const services = { db: {} as Kysely<Database>, stripeCalls: {} as StripeCalls, logger: {} as Logger };
const notifications = { enabled: false } as Notifications;

test('each part of a module gets its own settings and the services, and no Config', () => {
  const { module, given } = probe();
  const config = loadConfig({ ...SECRETS, PROBE_LIMIT: '9' }, [module]);
  const routeContext: RouteContext = { config, ...services, idempotencyLeaseMs: 10_000, notifications };
  const taskContext: TaskContext = { config, ...services, notifications };
  module.handlers(config, notifications);
  module.tasks?.(taskContext);
  module.apiRoutes?.(routeContext);
  module.adminRoutes?.(routeContext);
  // The wake (src/events/event-waits.ts) is built per part, bound to the configured attempts.
  const withWake = (part: unknown) => {
    const { wake, ...rest } = part as { wake: unknown };
    assert.equal(typeof wake, 'function');
    return rest;
  };
  assert.deepEqual(withWake(given.handlers), { settings: { probeLimit: 9 }, notifications });
  assert.deepEqual(given.tasks, { settings: { probeLimit: 9 }, ...services, livemode: false, notifications });
  assert.deepEqual(withWake(given.apiRoutes), { settings: { probeLimit: 9 }, ...services, livemode: false, idempotencyLeaseMs: 10_000, notifications });
  assert.deepEqual(withWake(given.adminRoutes), withWake(given.apiRoutes));
  assert.equal(module.settings, settings, 'the table is what loadConfig reads');
});

test('a configuration read without the module is refused by name, not read as defaults', () => {
  const { module } = probe();
  const config: Config = loadConfig(SECRETS);
  assert.throws(() => module.handlers(config, notifications), /the settings of module probe were not read/);
});

test('a module without settings or handlers needs none', () => {
  const bare = defineModule({ name: 'bare' });
  assert.deepEqual(bare.handlers(loadConfig(SECRETS), notifications), {});
  assert.equal('tasks' in bare, false);
  assert.equal('apiRoutes' in bare, false);
});
