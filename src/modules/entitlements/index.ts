// Stripe Entitlements, mirrored per account: which Features (by lookup_key) each account may use,
// as Stripe's active entitlements of the customers linked to it say (the ledger's
// customer-links.ts links a customer from a Checkout Session this service opened). An app asks
// GET /api/accounts/:id/entitlements, and is told of every change once
// (account.entitlements_updated; docs/notifications.md).
//
// Never collapsed: entitlements.active_entitlement_summary.updated (each is the customer's whole
// set at its second, ordered by that second: mirror.ts), and its thin form, which reaches the
// handler as the snapshot it names.
import { defineModule } from '../../business-module.js';
import { entitlementRecords } from './account-entitlements.js';
import { FULL_READ_TASK, fullReadTask } from './full-read.js';
import { entitlementsApiRoutes } from './routes.js';
import { summaryUpdated } from './summary-updated.js';
import type { EntitlementTables } from './tables.js';

export const entitlementsModule = defineModule({
  name: 'entitlements',
  migrations: new URL('../../../sql/entitlements/', import.meta.url),
  tables: ['customer_entitlements', 'entitlement_summaries'] satisfies Array<keyof EntitlementTables>,
  handlers: (_settings, { notifications }) => ({
    'entitlements.active_entitlement_summary.updated': summaryUpdated(notifications),
  }),
  tasks: (context) => ({ [FULL_READ_TASK]: fullReadTask(context) }),
  apiRoutes: entitlementsApiRoutes,
  accountRecords: entitlementRecords,
});
