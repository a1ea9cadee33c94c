// npm run replay: move events back to 'processing' and enqueue them, after the cause of their
// failure is fixed. Harmless for fulfilled orders: grants are keyed by order.
import { sinceOption } from '../src/cli/duration.js';
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { EVENT_STATUSES, type EventStatus } from '../src/db/schema.js';
import { findEventIds, replayEvents } from '../src/events/event-store.js';

const DEFAULT_LIMIT = 1_000;

runScript({
  usage: `usage: npm run replay -- <event_id…> [--json]
       npm run replay -- --status failed [--since <duration>] [--limit <n>] [--json]

Replays the named events, or every event with --status (received within --since, e.g. 2d), at
most --limit of them (default ${DEFAULT_LIMIT}; run it again for the next ones: replayed events
leave that status). Each goes back to 'processing' with a fresh attempt budget and runs at once.`,
  options: {
    status: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string', default: String(DEFAULT_LIMIT) },
  },
  positionals: true,
  async run({ values, positionals }, ctx) {
    const byStatus = typeof values.status === 'string';
    if (byStatus === positionals.length > 0) throw new UsageError('give event ids or --status, not both and not neither');
    const { db } = await ctx.database();
    let ids = positionals;
    let limitReached = false;
    if (byStatus) {
      const status = values.status as EventStatus;
      if (!EVENT_STATUSES.includes(status)) throw new UsageError(`--status must be one of ${EVENT_STATUSES.join(', ')}`);
      const since = values.since === undefined ? undefined : sinceOption(values.since, '--since', { example: '2d' });
      const limit = wholeNumberOption(values.limit, '--limit', { min: 1, example: '100' });
      ids = await findEventIds(db, { status, ...(since && { receivedSince: since }), limit });
      limitReached = ids.length === limit;
    }
    const replayed = await replayEvents(db, ids, { maxAttempts: ctx.config.maxAttempts });
    const missing = byStatus ? [] : ids.filter((id) => !replayed.includes(id));
    const lines = [`replayed ${replayed.length} event(s)`, ...replayed.map((id) => `  ${id}`)];
    if (missing.length) lines.push(`not found: ${missing.join(', ')}`);
    if (limitReached) lines.push(`stopped at --limit ${ids.length}: more may match; run it again for the next ones`);
    return { json: { replayed, not_found: missing, limit_reached: limitReached }, text: lines.join('\n'), exitCode: missing.length ? 1 : 0 };
  },
});
