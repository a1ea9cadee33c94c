// Usage-billed plans (docs/billing.md, "Usage-billed plans"): a run of an account under an active
// subscription to a plan that names a meter is recorded as usage (usage-records.ts, the ledger's
// first run recorder) instead of drawing credits, and reported to the plan's Stripe meter by a
// pump of its own (report-pump.ts), never in the request: each use billed once, also after
// Stripe's 24-hour identifier window (docs/operations.md, "Usage reports").
import { defineModule } from '../../business-module.js';
import { usageRecords } from './account-usage.js';
import { meterErrorReport } from './meter-error-reports.js';
import { usageReportPump } from './report-pump.js';
import { usageAdminRoutes, usageApiRoutes } from './routes.js';
import { usageGauges } from './usage-gauges.js';
import { pruneSentReports } from './usage-retention.js';
import type { UsageTables } from './tables.js';

export const usageModule = defineModule({
  name: 'usage',
  migrations: new URL('../../../sql/usage/', import.meta.url),
  tables: ['usage_records', 'usage_reports'] satisfies Array<keyof UsageTables>,
  // Thin only: the worker fetches each one's data (src/fulfilment/thin-fetch.ts). Never collapsed.
  handlers: () => ({ 'billing.meter.error_report_triggered': meterErrorReport, 'billing.meter.no_meter_found': meterErrorReport }),
  pumps: (context) => ({ usage_reports: usageReportPump(context) }),
  gauges: usageGauges,
  retention: pruneSentReports,
  apiRoutes: usageApiRoutes,
  adminRoutes: usageAdminRoutes,
  accountRecords: usageRecords,
});

export { recordUsage } from './usage-records.js';
// For npm run usage (scripts/usage.ts).
export { listUsageReports, replayUsageReports, USAGE_ID, usageSummary, type UsageReportView, type UsageSummary } from './report-store.js';
