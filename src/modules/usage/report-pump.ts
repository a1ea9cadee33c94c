// The usage reports' pump: usage_reports is its own queue. A round claims up to BATCH due reports
// in one statement (FOR UPDATE SKIP LOCKED, and next_attempt_at moved past the send as a lease,
// so two processes pumping never send one report at once), sends them outside any transaction,
// and records each answer. A process killed mid-send leaves its lease to run out: the report is
// sent again, under the same identifier, and Stripe records it once.
//
// Exactly once past Stripe's window: Stripe dedupes the identifier within at least 24 hours only.
// A report whose first send that may have reached Stripe is older than SAFE_WINDOW is never sent
// blindly: the meter's summary for its customer and minute is compared with what we know Stripe
// accepted there (checkPastWindow).
import { sql, type Kysely } from 'kysely';
import type { Database, ModuleContext, ModulePump, StripeCalls } from '../../business-module.js';
import { meterTotal, minuteOf, sendMeterEvent, type Report, type SendOutcome } from './meter-events.js';
import { withUsageTables } from './tables.js';

const BATCH = 20;
/** Longer than a send can take (the Stripe deadline, its retry included): a lease that runs out early only costs a send Stripe dedupes. */
const LEASE = '5 minutes';
/** Stripe's identifier window is at least 24 hours: an hour's margin for clocks and the send itself. */
const SAFE_WINDOW = '23 hours';
const IDLE_MS = 1_000;

/** The wait before the n-th retry: 5 s doubling, at most 15 minutes, so an hour's outage costs a few sends and no report nears the window unsent. */
export const retryDelayMs = (attempt: number) => Math.min(5_000 * 2 ** (attempt - 1), 15 * 60_000);

interface Claimed extends Report {
  /** first_sent_at before this claim: restored when this send surely never reached Stripe. */
  previous_first_sent_at: Date | null;
  /** Its first send that may have reached Stripe is older than SAFE_WINDOW. */
  past_window: boolean;
}

type Result = SendOutcome | { outcome: 'ambiguous'; reason: string };

export interface PumpOptions {
  /** Tests: a shorter backoff. */
  retryDelayMs?: (attempt: number) => number;
}

export function usageReportPump({ db, stripeCalls }: Pick<ModuleContext<unknown>, 'db' | 'stripeCalls'>, options: PumpOptions = {}): ModulePump {
  const backoff = options.retryDelayMs ?? retryDelayMs;
  return {
    idleMs: IDLE_MS,
    async pumpOnce() {
      const claimed = await claim(db);
      await Promise.all(claimed.map(async (report) => record(db, report, await settle(db, stripeCalls, report), backoff)));
      return claimed.length === BATCH ? 'more' : 'idle';
    },
  };
}

async function claim(db: Kysely<Database>): Promise<Claimed[]> {
  const { rows } = await sql<Claimed>`
    with due as (
      select usage_id, first_sent_at from usage_reports
      where status = 'pending' and next_attempt_at <= now()
      order by next_attempt_at
      limit ${BATCH}
      for update skip locked
    )
    update usage_reports r
    set attempts = r.attempts + 1, next_attempt_at = now() + ${LEASE}::interval, first_sent_at = coalesce(r.first_sent_at, now())
    from due, usage_records u
    where r.usage_id = due.usage_id and u.usage_id = r.usage_id
    returning r.usage_id, r.stripe_customer_id, r.attempts, u.event_name, u.quantity, u.used_at,
      due.first_sent_at as previous_first_sent_at,
      coalesce(due.first_sent_at < now() - ${SAFE_WINDOW}::interval, false) as past_window`.execute(db);
  return rows;
}

async function settle(db: Kysely<Database>, stripeCalls: StripeCalls, report: Claimed): Promise<Result> {
  if (!report.past_window) return sendMeterEvent(stripeCalls, report);
  const check = await checkPastWindow(db, stripeCalls, report);
  if (check.outcome !== 'not_recorded') return check;
  // A new send: its own window starts now.
  await withUsageTables(db)
    .updateTable('usage_reports')
    .set({ first_sent_at: sql<Date>`now()` })
    .where('usage_id', '=', report.usage_id)
    .execute();
  return sendMeterEvent(stripeCalls, report);
}

/**
 * Whether Stripe recorded a report whose identifier it may have forgotten. Over the report's
 * minute, for its customer, the meter must hold exactly what we know Stripe accepted (our sent
 * reports there), or that plus this report. Anything else (another report of ours there whose
 * fate is not known, usage sent by someone else, a meter that is not a sum) cannot be told
 * apart: the report ends failed, for an operator, rather than risk billing it twice.
 */
async function checkPastWindow(db: Kysely<Database>, stripeCalls: StripeCalls, report: Claimed): Promise<Result | { outcome: 'not_recorded' }> {
  const window = minuteOf(report.used_at);
  const { rows } = await sql<{ sent: number; unsettled: number }>`
    select coalesce(sum(u.quantity) filter (where r.status = 'sent'), 0)::int as sent,
           count(*) filter (where r.status <> 'sent')::int as unsettled
    from usage_reports r join usage_records u using (usage_id)
    where r.stripe_customer_id = ${report.stripe_customer_id} and u.event_name = ${report.event_name}
      and u.used_at >= ${window.start} and u.used_at < ${window.end} and r.usage_id <> ${report.usage_id}`.execute(db);
  const known = rows[0]!;
  const where = `${report.event_name} of ${report.stripe_customer_id} over ${window.start.toISOString()}`;
  if (known.unsettled > 0)
    return { outcome: 'ambiguous', reason: `past Stripe's identifier window, and ${known.unsettled} other report(s) of ${where} are not settled: cannot tell` };
  const read = await meterTotal(stripeCalls, report, window).catch((error: unknown) => ({ unreadable: `event summaries: ${String(error)}` }));
  if ('unreadable' in read) return { outcome: 'unknown', reason: `past Stripe's identifier window; ${read.unreadable}` };
  if (read.total === known.sent + report.quantity) return { outcome: 'recorded' };
  if (read.total === known.sent) return { outcome: 'not_recorded' };
  return {
    outcome: 'ambiguous',
    reason: `past Stripe's identifier window: the meter holds ${read.total} for ${where}, we know of ${known.sent} accepted and this report's ${report.quantity}: cannot tell`,
  };
}

async function record(db: Kysely<Database>, report: Claimed, result: Result, backoff: (attempt: number) => number): Promise<void> {
  const reports = withUsageTables(db).updateTable('usage_reports').where('usage_id', '=', report.usage_id);
  switch (result.outcome) {
    case 'recorded':
      await reports.set({ status: 'sent', sent_at: sql<Date>`now()`, last_error: null }).execute();
      return;
    case 'refused':
    case 'ambiguous':
      await reports.set({ status: 'failed', last_error: result.reason }).execute();
      return;
    case 'not_sent':
    case 'unknown':
      await reports
        .set({
          next_attempt_at: sql<Date>`now() + ${backoff(report.attempts)} * interval '1 millisecond'`,
          last_error: result.reason,
          // Surely not sent: the window is still the earlier send's, if any.
          ...(result.outcome === 'not_sent' && { first_sent_at: report.previous_first_sent_at }),
        })
        .execute();
  }
}
