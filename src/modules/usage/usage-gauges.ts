// The usage reports on /metrics: pending, failed, and the age of the oldest pending use, all from
// one query per scrape. Alert on failed > 0 (an operator's decision waits) and on an oldest pending
// age over a day: Stripe refuses uses older than 35 days, and the pump retries at least every 15
// minutes, so a day means it cannot send (docs/operations.md, "Usage reports").
import type { Kysely } from 'kysely';
import type { Database, ModuleGauge } from '../../business-module.js';
import { usageSummary, type UsageSummary } from './report-store.js';

export function usageGauges(db: Kysely<Database>): readonly ModuleGauge[] {
  let pending: Promise<UsageSummary> | undefined;
  // The gauges of one scrape are collected together: they share the query, the next scrape asks again.
  const summary = () => (pending ??= usageSummary(db).finally(() => setTimeout(() => (pending = undefined), 0)));
  return [
    { name: 'stripe_inbox_usage_reports_pending', help: 'Usage reports not yet sent to their Stripe meter', value: async () => (await summary()).pending },
    {
      name: 'stripe_inbox_usage_reports_failed',
      help: 'Usage reports that ended failed: an operator decides (npm run usage)',
      value: async () => (await summary()).failed,
    },
    {
      name: 'stripe_inbox_usage_reports_oldest_pending_age_seconds',
      help: 'Seconds since the use of the oldest pending usage report; Stripe refuses uses older than 35 days',
      value: async () => (await summary()).oldest_pending_age_seconds,
    },
  ];
}
