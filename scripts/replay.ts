// npm run replay: move events back to 'processing' and enqueue them, after the cause of their
// failure is fixed. Harmless for fulfilled orders: grants are keyed by order.
import { parseDuration } from '../src/cli/duration.js';
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { EVENT_STATUSES, type EventStatus } from '../src/db/schema.js';
import { findEventIds, replayEvents } from '../src/events/event-store.js';

runScript({
  usage: `usage: npm run replay -- <event_id…> [--json]
       npm run replay -- --status failed [--since <duration>] [--limit <n>] [--json]

Replays the named events, or every event with --status (received within --since, e.g. 2d).
Each goes back to 'processing' with a fresh attempt budget and runs at once.`,
  options: {
    status: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string', default: '1000' },
  },
  positionals: true,
  async run({ values, positionals }, ctx) {
    const byStatus = typeof values.status === 'string';
    if (byStatus === positionals.length > 0) throw new UsageError('give event ids or --status, not both and not neither');
    const { db } = await ctx.database();
    let ids = positionals;
    if (byStatus) {
      const status = values.status as EventStatus;
      if (!EVENT_STATUSES.includes(status)) throw new UsageError(`--status must be one of ${EVENT_STATUSES.join(', ')}`);
      const since = typeof values.since === 'string' ? values.since : undefined;
      const sinceMs = since === undefined ? undefined : parseDuration(since);
      if (since !== undefined && sinceMs === undefined) throw new UsageError('--since must be a duration like 30m, 12h or 2d');
      const limit = wholeNumberOption(values.limit, '--limit', { min: 1, example: '100' });
      ids = await findEventIds(db, { status, ...(sinceMs !== undefined && { receivedSince: new Date(Date.now() - sinceMs) }), limit });
    }
    const replayed = await replayEvents(db, ids, { maxAttempts: ctx.config.maxAttempts });
    const missing = byStatus ? [] : ids.filter((id) => !replayed.includes(id));
    const lines = [`replayed ${replayed.length} event(s)`, ...replayed.map((id) => `  ${id}`)];
    if (missing.length) lines.push(`not found: ${missing.join(', ')}`);
    return { json: { replayed, not_found: missing }, text: lines.join('\n'), exitCode: missing.length ? 1 : 0 };
  },
});
