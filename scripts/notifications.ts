// npm run notifications: outcome notifications by the status of their deliveries (failed ones by
// default: those the app never got), and their replay once the app takes them again. The same
// reads and replay as /admin/api/notifications.
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../src/db/schema.js';
import { listNotifications, replayNotifications, type NotificationView } from '../src/notifications/notification-store.js';
import { NOTIFICATION_ID } from '../src/notifications/outbox.js';

const DEFAULT_LIMIT = 50;
/** As the admin API's list: each notification brings its deliveries and their last attempts. */
const MAX_LIMIT = 500;

function notificationLines(n: NotificationView): string[] {
  return [
    `${n.notification_id}  ${n.type}  account ${n.account_id ?? 'none'}  ${n.created_at}${n.event_id ? `  event ${n.event_id}` : ''}`,
    ...n.deliveries.map((d) =>
      [
        `  ${d.endpoint}  ${d.status}  attempts ${d.attempts}`,
        d.last_status_code !== null && `last status ${d.last_status_code}`,
        d.last_error,
        d.next_attempt_at && `next attempt ${d.next_attempt_at}`,
      ]
        .filter(Boolean)
        .join('  '),
    ),
  ];
}

runScript({
  usage: `usage: npm run notifications -- [--status pending|delivered|failed] [--limit <n>] [--json]
       npm run notifications -- --replay <id…> [--json]
       npm run notifications -- --replay-failed [--json]

Lists the newest --limit (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}) notifications with a delivery in --status
(default failed: the dead letters, whose attempts ran out), each delivery with its endpoint,
status, attempts, last status code and last error. --replay queues every delivery of the named
notifications (msg_…) again, delivered ones too; --replay-failed every failed delivery. Each
starts a fresh count of attempts with the same webhook-id and body, so the app can drop one it
already has; a delivery with an attempt in flight is left to it. Exits 1 when a named
notification does not exist.`,
  options: {
    status: { type: 'string' },
    limit: { type: 'string' },
    replay: { type: 'boolean' },
    'replay-failed': { type: 'boolean' },
  },
  positionals: true,
  async run({ values, positionals }, ctx) {
    const replayIds = values.replay === true;
    const replayFailed = values['replay-failed'] === true;
    if (replayIds && replayFailed) throw new UsageError('give --replay <id…> or --replay-failed, not both');
    if (!replayIds && positionals.length > 0) throw new UsageError(`notification ids are replayed with --replay <id…>; got ${positionals.join(' ')}`);
    if ((replayIds || replayFailed) && (values.status !== undefined || values.limit !== undefined)) {
      throw new UsageError('--status and --limit choose what to list; a replay takes the ids named or every failed delivery');
    }

    if (!replayIds && !replayFailed) {
      const status = (values.status ?? 'failed') as DeliveryStatus;
      if (!DELIVERY_STATUSES.includes(status)) throw new UsageError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}`);
      const limit = values.limit === undefined ? DEFAULT_LIMIT : wholeNumberOption(values.limit, '--limit', { min: 1, max: MAX_LIMIT, example: '100' });
      const { db } = await ctx.database();
      const notifications = await listNotifications(db, { status, limit });
      const limitReached = notifications.length === limit;
      const lines = [
        `${notifications.length} notification(s) with a delivery ${status}, newest first${notifications.length ? ':' : ''}`,
        ...notifications.flatMap(notificationLines),
      ];
      if (limitReached) lines.push(`stopped at --limit ${limit}: older ones may match`);
      return { json: { notifications, limit_reached: limitReached }, text: lines.join('\n') };
    }

    if (replayIds && positionals.length === 0) throw new UsageError('--replay needs at least one notification id (msg_…)');
    const ids = [...new Set(positionals)];
    const bad = ids.find((id) => !NOTIFICATION_ID.test(id));
    if (bad !== undefined)
      throw new UsageError(`--replay takes notification ids (msg_ and letters, digits, _ or -, as webhook-id carries them); got ${JSON.stringify(bad)}`);
    const { db } = await ctx.database();
    const { replayed, skipped } = await replayNotifications(db, replayFailed ? { failed: true } : { ids });
    // The store skips both the unknown and those with an attempt in flight; only the first is a mistake.
    const known = skipped.length
      ? new Set((await listNotifications(db, { ids: skipped, limit: skipped.length })).map((n) => n.notification_id))
      : new Set<string>();
    const inFlight = skipped.filter((id) => known.has(id));
    const missing = skipped.filter((id) => !known.has(id));
    const lines = [`replayed ${replayed.length} notification(s)`, ...replayed.map((id) => `  ${id}`)];
    if (inFlight.length) lines.push(`left to the attempt in flight: ${inFlight.join(', ')}`);
    if (missing.length) lines.push(`not found: ${missing.join(', ')}`);
    return { json: { replayed, in_flight: inFlight, not_found: missing }, text: lines.join('\n'), exitCode: missing.length ? 1 : 0 };
  },
});
