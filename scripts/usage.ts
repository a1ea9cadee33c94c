// npm run usage: the usage reports to Stripe's meters (docs/operations.md, "Usage reports"): how
// many are pending, failed and sent, and the oldest pending one's age; the failed ones (or those of
// --list <status>) with their reason; and the replay of failed ones once the operator has checked
// the meter in Stripe and found the usage missing.
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { listUsageReports, replayUsageReports, USAGE_ID, usageSummary, type UsageReportView } from '../src/modules/usage/index.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;
const STATUSES = ['pending', 'sent', 'failed'] as const;
type Status = (typeof STATUSES)[number];

const reportLine = (r: UsageReportView) =>
  [
    `${r.usage_id}  ${r.status}  ${r.event_name} ${r.quantity}  account ${r.account_id}  customer ${r.stripe_customer_id}  used ${r.used_at.toISOString()}`,
    `attempts ${r.attempts}`,
    r.last_error,
  ]
    .filter(Boolean)
    .join('  ');

runScript({
  usage: `usage: npm run usage -- --status [--list pending|sent|failed] [--limit <n>] [--json]
       npm run usage -- --replay <usage_id…> [--json]
       npm run usage -- --replay-failed [--json]

--status counts the reports pending, failed and sent, with the age of the oldest pending one
(Stripe refuses uses older than 35 days), and lists the newest --limit (default ${DEFAULT_LIMIT}, at most
${MAX_LIMIT}) of --list (default failed) with their reason. --replay sends the named failed reports
again as new, without checking the meter: only after Stripe's dashboard shows the usage missing
(a report that is not failed is left as it is). --replay-failed replays every failed report.
Exits 1 when a named report does not exist or is not failed.`,
  options: {
    status: { type: 'boolean' },
    list: { type: 'string' },
    limit: { type: 'string' },
    replay: { type: 'boolean' },
    'replay-failed': { type: 'boolean' },
  },
  positionals: true,
  async run({ values, positionals }, ctx) {
    const modes = [values.status === true, values.replay === true, values['replay-failed'] === true].filter(Boolean).length;
    if (modes !== 1) throw new UsageError('give one of --status, --replay <usage_id…> or --replay-failed');
    if (values.replay !== true && positionals.length > 0)
      throw new UsageError(`usage ids are replayed with --replay <usage_id…>; got ${positionals.join(' ')}`);
    if (values.status !== true && (values.list !== undefined || values.limit !== undefined)) throw new UsageError('--list and --limit go with --status');

    if (values.status === true) {
      const status = (values.list ?? 'failed') as Status;
      if (!STATUSES.includes(status)) throw new UsageError(`--list must be one of ${STATUSES.join(', ')}`);
      const limit = values.limit === undefined ? DEFAULT_LIMIT : wholeNumberOption(values.limit, '--limit', { min: 1, max: MAX_LIMIT, example: '100' });
      const { db } = await ctx.database();
      const summary = await usageSummary(db);
      const reports = await listUsageReports(db, { status, limit });
      const lines = [
        `usage reports: ${summary.pending} pending (oldest used ${Math.round(summary.oldest_pending_age_seconds)} s ago), ${summary.failed} failed, ${summary.sent} sent`,
        `${reports.length} ${status}, newest first${reports.length ? ':' : ''}`,
        ...reports.map(reportLine),
      ];
      if (reports.length === limit) lines.push(`stopped at --limit ${limit}: older ones may match`);
      return { json: { summary, reports, limit_reached: reports.length === limit }, text: lines.join('\n') };
    }

    const ids = [...new Set(positionals)];
    if (values.replay === true && ids.length === 0) throw new UsageError('--replay needs at least one usage id (usage_…)');
    const bad = ids.find((id) => !USAGE_ID.test(id));
    if (bad !== undefined) throw new UsageError(`--replay takes usage ids (usage_ and 32 hex digits); got ${JSON.stringify(bad)}`);
    const { db } = await ctx.database();
    const replayed = await replayUsageReports(db, values.replay === true ? { ids } : { failed: true });
    const known = new Map((await listUsageReports(db, { ids })).map((r) => [r.usage_id, r.status]));
    const notFailed = ids.filter((id) => !replayed.includes(id) && known.has(id));
    const missing = ids.filter((id) => !known.has(id));
    const lines = [`replayed ${replayed.length} usage report(s)`, ...replayed.map((id) => `  ${id}`)];
    if (notFailed.length) lines.push(`not failed, left as they are: ${notFailed.map((id) => `${id} (${known.get(id)})`).join(', ')}`);
    if (missing.length) lines.push(`not found: ${missing.join(', ')}`);
    return {
      json: { replayed, not_failed: notFailed, not_found: missing },
      text: lines.join('\n'),
      exitCode: notFailed.length || missing.length ? 1 : 0,
    };
  },
});
