// npm run sweep: the backstop sweep on demand (the worker also runs it every SWEEP_CRON tick).
import { runScript, UsageError } from '../src/cli/script.js';
import { sweepStaleEvents } from '../src/sweep/sweep-stale-events.js';

runScript({
  usage: `usage: npm run sweep -- [--dry-run] [--stale-after <seconds>] [--limit <n>] [--json]

Re-enqueues 'processing' events that no live worker holds and that have waited longer than
--stale-after seconds (default STALE_AFTER_SECONDS) with no job waiting to run. Safe to run at
any time, from any number of places at once. --dry-run lists what would be reclaimed.`,
  options: {
    'dry-run': { type: 'boolean' },
    'stale-after': { type: 'string' },
    limit: { type: 'string' },
  },
  async run({ values }, ctx) {
    const staleAfter = values['stale-after'] === undefined ? ctx.config.staleAfterMs / 1000 : Number(values['stale-after']);
    if (!Number.isInteger(staleAfter) || staleAfter < 0) throw new UsageError('--stale-after must be a whole number of seconds, e.g. --stale-after 300');
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new UsageError('--limit must be a positive whole number, e.g. --limit 1000');

    const { db } = await ctx.database();
    const result = await sweepStaleEvents(db, {
      staleAfterMs: staleAfter * 1000,
      maxAttempts: ctx.config.maxAttempts,
      dryRun: values['dry-run'] === true,
      ...(limit !== undefined && { limit }),
    });
    const text = result.dry_run
      ? `dry run: ${result.event_ids.length} event(s) would be reclaimed${result.event_ids.length ? `:\n  ${result.event_ids.join('\n  ')}` : ''}`
      : `reclaimed ${result.reclaimed}, marked failed ${result.failed}, in ${result.batches} batch(es)`;
    return { json: result, text };
  },
});
