// The business modules this service runs, in order: where two list the same event type, the
// first that does not answer 'ignored' gives the event its outcome (src/fulfilment/dispatch.ts).
// Only the entry points (src/main.ts, scripts/, tests, benchmarks) import this file.
import type { BusinessModule } from '../business-module.js';
import { readMigrations } from '../db/migrate.js';
import { billingModule } from './billing/index.js';
import { creditsModule } from './credits/index.js';

export const businessModules: readonly BusinessModule[] = [creditsModule, billingModule];

/** Every migration this service applies: the core's and its modules'. */
export const serviceMigrations = () => readMigrations(businessModules);
