// @ts-check
// Usage reports to Stripe's meters: the counts, and a table of one status with each report's
// reason and, for a failed one, a Replay button. A replay sends it again as new, without the meter
// check: only once Stripe's dashboard shows the usage missing (docs/operations.md, "Usage reports").
import { api } from './api-client.js';
import { $, buttonCell, cell, tableBody } from './dom.js';

/**
 * @typedef {{ pending: number, failed: number, sent: number, oldest_pending_age_seconds: number }} UsageSummary
 * @typedef {{ usage_id: string, account_id: string, stripe_customer_id: string, event_name: string, quantity: number, used_at: string,
 *   status: string, attempts: number, last_error: string | null }} UsageReportView
 * @typedef {{ summary: UsageSummary, reports: UsageReportView[] }} UsageReports
 */

/**
 * @param {UsageReports} usage
 * @param {{ status: string, afterReplay: () => Promise<void> }} options
 */
export function usageTable({ summary, reports }, { status, afterReplay }) {
  $('usage-facts').textContent =
    'usage reports: pending ' +
    summary.pending +
    ', failed ' +
    summary.failed +
    ', sent ' +
    summary.sent +
    ', oldest pending ' +
    Math.round(summary.oldest_pending_age_seconds) +
    ' s';
  const headings = ['usage', 'status', 'meter', 'quantity', 'account', 'customer', 'used', 'attempts', 'reason', ''];
  const body = tableBody($('usage-reports'), headings, reports.length, 'No ' + status + ' usage reports.');
  for (const r of reports) {
    const row = body.insertRow();
    row.dataset.usageId = r.usage_id;
    cell(row, r.usage_id, 'id');
    cell(row, r.status);
    cell(row, r.event_name);
    cell(row, r.quantity);
    cell(row, r.account_id);
    cell(row, r.stripe_customer_id);
    cell(row, new Date(r.used_at).toLocaleString());
    cell(row, r.attempts);
    cell(row, r.last_error ?? '');
    if (r.status !== 'failed') cell(row, '');
    else
      buttonCell(row, 'replay', 'Replay', async () => {
        await api('POST', '/usage-reports/replay', { ids: [r.usage_id] });
        await afterReplay();
      });
  }
}
