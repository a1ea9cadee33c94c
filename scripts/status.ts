// npm run status: is anything stuck, failed or behind? The same figures as GET /admin/api/status.
import { sinceOption } from '../src/cli/duration.js';
import { runScript } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { listFailedEvents, listWaitingEvents } from '../src/events/event-lists.js';
import { countsByType, inboxStatusReader } from '../src/events/read-model.js';
import { notificationSummary, type EndpointSummary } from '../src/notifications/notification-store.js';
import { describeSweep, sweepState } from '../src/maintenance/sweep-schedule.js';

/** Per endpoint, the notifications the app has not yet received; an endpoint with none is not listed. */
function notificationLines(enabled: boolean, endpoints: readonly EndpointSummary[]): string[] {
  if (endpoints.length === 0) return [`notifications: ${enabled ? 'none pending or failed' : 'off (APP_WEBHOOK_URL unset)'}`];
  return [
    'notifications not yet delivered, by endpoint:',
    ...endpoints.map(
      (e) =>
        `  ${e.endpoint}: pending ${e.pending}, failed ${e.failed}, oldest pending ${e.oldest_pending_age_seconds === null ? 'none' : `${e.oldest_pending_age_seconds}s`}`,
    ),
    ...(endpoints.some((e) => e.failed > 0) ? ['  failed ones: npm run notifications -- --status failed, then --replay-failed once the app takes them'] : []),
  ];
}

runScript({
  usage: `usage: npm run status -- [--since <duration>] [--failed <n>] [--waiting <n>] [--json]

Counts by status, age of the oldest 'processing' event, queued jobs, the last sweep and when the
next is due (or that no worker is connected to run it), counts by type
and status for events received within --since (default 24h), the newest --failed (default 10)
dead letters with their last error, the --waiting (default 10) parked events that give up first with
what each waits for, and per endpoint the notifications to the app pending and
failed, with the age of the oldest pending one. Exits 1 when any event has failed.`,
  options: { failed: { type: 'string', default: '10' }, waiting: { type: 'string', default: '10' }, since: { type: 'string', default: '24h' } },
  async run({ values }, ctx) {
    const limit = wholeNumberOption(values.failed, '--failed', { min: 0, example: '20' });
    const since = sinceOption(values.since, '--since', { example: '7d' });
    const { db } = await ctx.database();
    const status = await inboxStatusReader(db)();
    const failed = await listFailedEvents(db, limit);
    const waiting = await listWaitingEvents(db, wholeNumberOption(values.waiting, '--waiting', { min: 0, example: '20' }));
    const byType = await countsByType(db, since);
    const notifications = { enabled: ctx.config.appWebhookUrls.length > 0, endpoints: await notificationSummary(db) };
    const sweep = await sweepState(db, status.last_sweep_at, ctx.config.sweepCron);
    const staleAfterSeconds = ctx.config.staleAfterMs / 1000;
    const lines = [
      `events:  ${Object.entries(status.counts)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
      `oldest processing: ${status.oldest_processing_age_seconds === null ? 'none' : `${status.oldest_processing_age_seconds}s${status.oldest_processing_age_seconds > 2 * staleAfterSeconds ? '  ← older than 2 × STALE_AFTER_SECONDS: is a worker running?' : ''}`}`,
      `waiting: ${status.waiting} (processing events parked until what they need arrives, such as a dispute before its payment's event)`,
      ...waiting.map((e) => `  ${e.event_id}  ${e.type}  waits for ${e.waits_for?.join(' ')} until ${e.wait_until?.toISOString()}  ${e.last_error ?? ''}`),
      `jobs queued: ${status.jobs_queued}, carrying ${status.events_queued} events`,
      `last sweep:  ${describeSweep(sweep, ctx.config.sweepCron)}`,
      `by type, received within ${String(values.since)}:${byType.length ? '' : ' none'}`,
      ...byType.map(
        ({ type, counts }) =>
          `  ${type}: ${Object.entries(counts)
            .filter(([, n]) => n > 0)
            .map(([k, n]) => `${k} ${n}`)
            .join(', ')}`,
      ),
      ...(failed.length ? ['failed (newest first; fix the cause, then npm run replay -- <event_id>):'] : []),
      ...failed.map((e) => `  ${e.event_id}  ${e.type}  attempts ${e.attempts}  ${e.last_error ?? ''}`),
      ...notificationLines(notifications.enabled, notifications.endpoints),
    ];
    return {
      json: { ...status, ...sweep, by_type: byType, failed, waiting_events: waiting, notifications },
      text: lines.join('\n'),
      exitCode: status.counts.failed > 0 ? 1 : 0,
    };
  },
});
