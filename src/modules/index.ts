// The business modules this service runs, in order: where two list the same event type, the
// first that does not answer 'ignored' gives the event its outcome (src/fulfilment/dispatch.ts).
// The ledger first: credits and billing grant into it. Only the entry points (src/main.ts,
// scripts/, tests, benchmarks) import this file.
import type { BusinessModule } from '../business-module.js';
import { envVariables, loadConfig, type Config } from '../config.js';
import { readMigrations } from '../db/migrate.js';
import { billingModule } from './billing/index.js';
import { creditsModule } from './credits/index.js';
import { ledgerModule } from './ledger/index.js';

export const businessModules: readonly BusinessModule[] = [ledgerModule, creditsModule, billingModule];

/** Every migration this service applies: the core's and its modules'. */
export const serviceMigrations = () => readMigrations(businessModules);

/** The service's configuration: the core's settings and every module's, read and checked together. */
export const loadServiceConfig = (env: NodeJS.ProcessEnv = process.env): Config => loadConfig(env, businessModules);

/** Every variable the service reads, the core's and its modules': docker-compose.yml and .env.example list each. */
export const SERVICE_ENV_VARIABLES = envVariables(businessModules);
