// The business modules this service runs, in order: where two list the same event type, the
// first that does not answer 'ignored' gives the event its outcome (src/fulfilment/dispatch.ts).
// The ledger first: credits and billing grant into it, and pay their refunds' and disputes' unpaid
// claims when a run is reversed (their settlers, given to the ledger here); its runs are recorded
// as usage under a usage-billed plan (the usage module's recorder, also given here); entitlements after
// billing, as they follow from what the others linked. Only the entry points (src/main.ts,
// scripts/, tests, benchmarks) import this file.
import type { Kysely } from 'kysely';
import type { BusinessModule, Database } from '../business-module.js';
import { envVariables, loadConfig, type Config } from '../config.js';
import { readMigrations } from '../db/migrate.js';
import { billingModule, newPlan, planCatalog, settlePeriodShortfalls } from './billing/index.js';
import { creditsModule, newPackage, packageCatalog, settleOrderShortfalls } from './credits/index.js';
import { entitlementsModule } from './entitlements/index.js';
import { defineLedger } from './ledger/index.js';
import { recordUsage, usageModule } from './usage/index.js';

export const businessModules: readonly BusinessModule[] = [
  defineLedger({ runRecorders: [recordUsage], shortfallSettlers: [settleOrderShortfalls, settlePeriodShortfalls] }),
  creditsModule,
  billingModule,
  entitlementsModule,
  usageModule,
];

/** Every migration this service applies: the core's and its modules'. */
export const serviceMigrations = () => readMigrations(businessModules);

/** The service's configuration: the core's settings and every module's, read and checked together. */
export const loadServiceConfig = (env: NodeJS.ProcessEnv = process.env): Config => loadConfig(env, businessModules);

/** Every variable the service reads, the core's and its modules': docker-compose.yml and .env.example list each. */
export const SERVICE_ENV_VARIABLES = envVariables(businessModules);

/** The catalog's kinds (src/modules/catalog/), each with what adding one takes: for npm run catalog. */
export const catalogKinds = {
  package: { kind: packageCatalog, input: newPackage },
  plan: { kind: planCatalog, input: newPlan },
} as const;

/**
 * Why a production start should worry, or undefined: nothing is on sale, so every checkout is
 * refused. The seeded 'starter' and 'pro_monthly' count; a team that archived them and added
 * nothing yet has an empty catalog.
 */
export async function emptyCatalogWarning(db: Kysely<Database>): Promise<string | undefined> {
  const items = [...(await packageCatalog.list(db)), ...(await planCatalog.list(db))];
  if (items.some((item) => item.active)) return undefined;
  return 'the catalog has no active package or plan: every checkout will be refused; add one with npm run catalog -- add-package (or add-plan), or POST /admin/api/packages';
}
