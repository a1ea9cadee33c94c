// npm run prune: retention on demand (the worker also prunes daily at 03:17).
import { runScript } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { MAX_RETENTION_DAYS, MIN_RETENTION_DAYS, pruneEvents } from '../src/maintenance/prune.js';
import { businessModules } from '../src/modules/index.js';

runScript({
  usage: `usage: npm run prune -- [--older-than-days <n>] [--json]

Deletes processed, ignored and duplicate events that finished more than --older-than-days
(default EVENT_RETENTION_DAYS) ago, in batches. Never 'processing' or 'failed' events; never
fewer than ${MIN_RETENTION_DAYS} days (Stripe resends events for up to 30 days). Grants are keyed
by order, so a pruned event delivered again still grants nothing. Also deletes the API's
Idempotency-Keys taken before then (checkouts, subscriptions; never a refund's, which number
the order's refunds), and each module's finished outbox rows written before then (the usage
reports sent to Stripe; their usage records stay).`,
  options: { 'older-than-days': { type: 'string' } },
  async run({ values }, ctx) {
    const raw = values['older-than-days'];
    const days =
      raw === undefined
        ? ctx.config.eventRetentionDays
        : wholeNumberOption(raw, '--older-than-days', {
            min: MIN_RETENTION_DAYS,
            max: MAX_RETENTION_DAYS,
            example: '90',
            reason: 'Stripe resends events for up to 30 days',
          });
    const { db } = await ctx.database();
    const result = await pruneEvents(db, { retentionDays: days, modules: businessModules });
    return {
      json: result,
      text: `deleted ${result.deleted} finished event(s) older than ${result.finished_before}, in ${result.batches} batch(es); ${result.deleted_jobs} spent job(s); ${result.deleted_keys} Idempotency-Key(s); ${result.deleted_notifications} delivered notification(s)${Object.entries(
        result.deleted_by_module,
      )
        .map(([module, n]) => `; ${n} ${module} row(s)`)
        .join('')}`,
    };
  },
});
