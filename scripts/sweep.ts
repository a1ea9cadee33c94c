// npm run sweep: the backstop sweep on demand (the worker also runs it every SWEEP_CRON tick).
import { runScript } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { sweepStaleEvents } from '../src/maintenance/sweep.js';

runScript({
  usage: `usage: npm run sweep -- [--dry-run] [--stale-after <seconds>] [--limit <n>] [--json]

Re-enqueues 'processing' events that no live worker holds and that have waited longer than
--stale-after seconds (default STALE_AFTER_SECONDS) with no job waiting to run. Safe to run at
any time, from any number of places at once. --dry-run lists what would be reclaimed or marked failed.`,
  options: {
    'dry-run': { type: 'boolean' },
    'stale-after': { type: 'string' },
    limit: { type: 'string' },
  },
  async run({ values }, ctx) {
    const staleAfter =
      values['stale-after'] === undefined
        ? ctx.config.staleAfterMs / 1000
        : wholeNumberOption(values['stale-after'], '--stale-after', { min: 0, example: '300', reason: 'seconds' });
    const limit = values.limit === undefined ? undefined : wholeNumberOption(values.limit, '--limit', { min: 1, example: '1000' });

    const { db } = await ctx.database();
    const result = await sweepStaleEvents(db, {
      staleAfterMs: staleAfter * 1000,
      maxAttempts: ctx.config.maxAttempts,
      dryRun: values['dry-run'] === true,
      ...(limit !== undefined && { limit }),
    });
    const text = result.dry_run
      ? `dry run: would reclaim ${result.reclaimed}, mark failed ${result.failed} (on their last attempt)${result.event_ids.length ? `:\n  ${result.event_ids.join('\n  ')}` : ''}`
      : `reclaimed ${result.reclaimed}, marked failed ${result.failed}, in ${result.batches} batch(es)`;
    return { json: result, text };
  },
});
