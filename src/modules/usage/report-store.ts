// What an operator sees of the usage reports and may do to them: npm run usage, the admin API
// (GET /admin/api/usage-reports, POST /admin/api/usage-reports/replay) and the metrics read here.
// A replay is an operator's decision that Stripe does not hold the usage (docs/operations.md,
// "Usage reports"): it sends the report as new, so it takes failed reports only, never sent ones.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../business-module.js';
import { withUsageTables, type UsageReportStatus } from './tables.js';

export const USAGE_ID = /^usage_[0-9a-f]{32}$/;

export interface UsageReportView {
  usage_id: string;
  account_id: string;
  stripe_customer_id: string;
  event_name: string;
  quantity: number;
  used_at: Date;
  status: UsageReportStatus;
  attempts: number;
  first_sent_at: Date | null;
  sent_at: Date | null;
  next_attempt_at: Date;
  last_error: string | null;
}

export interface UsageSummary {
  pending: number;
  failed: number;
  sent: number;
  /** Seconds since the oldest pending report's use; 0 with none. Stripe refuses uses older than 35 days. */
  oldest_pending_age_seconds: number;
}

export async function usageSummary(db: Kysely<Database>): Promise<UsageSummary> {
  const { rows } = await sql<UsageSummary>`
    select count(*) filter (where r.status = 'pending')::int as pending,
           count(*) filter (where r.status = 'failed')::int as failed,
           count(*) filter (where r.status = 'sent')::int as sent,
           coalesce(extract(epoch from now() - min(u.used_at) filter (where r.status = 'pending')), 0)::float8 as oldest_pending_age_seconds
    from usage_reports r join usage_records u using (usage_id)`.execute(db);
  return rows[0]!;
}

/** The newest `limit` reports in `status`, or those named. */
export async function listUsageReports(
  db: Kysely<Database>,
  filter: { status: UsageReportStatus; limit: number } | { ids: readonly string[] },
): Promise<UsageReportView[]> {
  let query = withUsageTables(db)
    .selectFrom('usage_reports as r')
    .innerJoin('usage_records as u', 'u.usage_id', 'r.usage_id')
    .select([
      'r.usage_id',
      'u.account_id',
      'r.stripe_customer_id',
      'u.event_name',
      'u.quantity',
      'u.used_at',
      'r.status',
      'r.attempts',
      'r.first_sent_at',
      'r.sent_at',
      'r.next_attempt_at',
      'r.last_error',
    ])
    .orderBy('r.created_at', 'desc')
    .orderBy('r.usage_id', 'desc');
  query = 'ids' in filter ? query.where('r.usage_id', 'in', filter.ids) : query.where('r.status', '=', filter.status).limit(filter.limit);
  return 'ids' in filter && filter.ids.length === 0 ? [] : query.execute();
}

/**
 * Sends failed reports again, as new (no check against the meter: the operator checked it): the
 * named ones, or every failed one. Returns those replayed; named ones that are not failed are left.
 */
export async function replayUsageReports(db: Kysely<Database>, which: { ids: readonly string[] } | { failed: true }): Promise<string[]> {
  let query = withUsageTables(db)
    .updateTable('usage_reports')
    .set({ status: 'pending', next_attempt_at: sql<Date>`now()`, first_sent_at: null, last_error: null })
    .where('status', '=', 'failed');
  if ('ids' in which) {
    if (which.ids.length === 0) return [];
    query = query.where('usage_id', 'in', which.ids);
  }
  return (await query.returning('usage_id').execute()).map((row) => row.usage_id);
}
