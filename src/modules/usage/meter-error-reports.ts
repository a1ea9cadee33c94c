// Stripe's asynchronous refusals of meter events it had accepted (thin notifications
// v1.billing.meter.error_report_triggered and v1.billing.meter.no_meter_found; the worker fetches
// their data from /v2/core/events/:id, src/fulfilment/thin-fetch.ts): the reports they name were
// not billed, so they end `failed` with Stripe's error code, for an operator. Stripe names up to a
// few sample events per error type, by the identifier we sent (the usage id): reports it refused
// beyond the samples cannot be found from the event, and its outcome says how many there were.
//
// Never collapsed: each report covers its own validation window, so each Event object acts.
import { sql } from 'kysely';
import { z } from 'zod';
import { objectOf, type EventHandler } from '../../business-module.js';

const errorReport = z.object({
  reason: z.object({
    error_count: z.number().int(),
    error_types: z.array(
      z.object({
        code: z.string(),
        error_count: z.number().int(),
        sample_errors: z.array(z.object({ request: z.object({ identifier: z.string() }).nullish() })).default([]),
      }),
    ),
  }),
  related_object: z.object({ id: z.string() }).nullish(),
});

// Stripe's codes are snake case; anything else is not quoted into last_error.
const codeOf = (code: string) => (/^[a-z_]{1,64}$/.test(code) ? code : 'an unnamed error');

export const meterErrorReport: EventHandler = async (tx, event) => {
  const report = objectOf(errorReport, event);
  const meter = report.related_object?.id ?? 'an unnamed meter';
  let failed = 0;
  let named = 0;
  for (const type of report.reason.error_types) {
    const ids = type.sample_errors.flatMap((sample) => (sample.request ? [sample.request.identifier] : []));
    named += ids.length;
    if (ids.length === 0) continue;
    const reason = `Stripe refused the meter event after accepting it (${codeOf(type.code)}, meter ${meter}, event ${event.event_id}): not billed`;
    const { numAffectedRows } = await sql`
      update usage_reports set status = 'failed', last_error = ${reason}, sent_at = null
      where usage_id = any(${ids}::text[]) and status <> 'failed'`.execute(tx);
    failed += Number(numAffectedRows ?? 0);
  }
  const unnamed = report.reason.error_count - named;
  const beyond = unnamed > 0 ? `; ${unnamed} more refused event(s) are not named by Stripe's samples: compare the meter with usage_reports` : '';
  if (failed === 0 && unnamed <= 0) return { status: 'ignored', reason: `meter ${meter}'s error report names no report of ours` };
  return { status: 'processed', ...(failed + unnamed > 0 && { reason: `${failed} usage report(s) marked failed${beyond}` }) };
};
