// npm run reconcile: claim events Stripe has but we never received (Events API, last 30 days).
import { sinceOption } from '../src/cli/duration.js';
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';
import { reconcileEvents, STRIPE_EVENTS_RETENTION_DAYS, type ReconcileLists } from '../src/maintenance/reconcile.js';
import { CallRate } from '../src/stripe/call-rate.js';
import { createStripeClient } from '../src/stripe/client.js';

runScript({
  usage: `usage: npm run reconcile -- --since <duration> [--lists snapshot|thin|both] [--undelivered-only] [--max-calls <n>] [--dry-run] [--json]

Lists Stripe's events created within --since (e.g. 3d; at most ${STRIPE_EVENTS_RETENTION_DAYS}d, all Stripe keeps) and claims
every one we do not have, through the same path as the webhook; the worker then fulfils them.
--lists picks Stripe's lists: the Events API (snapshot events), the v2 events list (a thin
destination's notifications), or both (the default). --undelivered-only asks the Events API
only for events it failed to deliver (the v2 list has no such filter). --max-calls stops after
that many list calls (pages of 100 events, newest first; unbounded unless given), and says so.
Calls are paced at RECONCILE_CALLS_PER_SECOND. Running it twice changes nothing. Needs
STRIPE_SECRET_KEY (and honours STRIPE_API_BASE).`,
  options: {
    since: { type: 'string' },
    lists: { type: 'string' },
    'undelivered-only': { type: 'boolean' },
    'max-calls': { type: 'string' },
    'dry-run': { type: 'boolean' },
  },
  async run({ values }, ctx) {
    if (values.since === undefined) throw new UsageError('--since is required: a duration like 12h or 3d');
    const since = sinceOption(values.since, '--since', {
      maxDays: STRIPE_EVENTS_RETENTION_DAYS,
      example: '3d',
      reason: `Stripe's Events API keeps ${STRIPE_EVENTS_RETENTION_DAYS} days`,
    });
    const lists = (values.lists as string | undefined) ?? 'both';
    if (!isReconcileLists(lists)) throw new UsageError(`--lists must be snapshot, thin or both, not "${lists}"`);
    const maxCalls = values['max-calls'] === undefined ? undefined : wholeNumberOption(values['max-calls'], '--max-calls', { min: 1, example: '50' });
    if (!ctx.config.stripeSecretKey) throw new UsageError("STRIPE_SECRET_KEY is required: reconcile reads Stripe's Events API");
    const stripe = createStripeClient(ctx.config.stripeSecretKey, ctx.config.stripeApiBase, { timeoutMs: ctx.config.stripeTimeoutMs });
    const { db } = await ctx.database();
    const result = await reconcileEvents(db, stripe, {
      since,
      lists,
      undeliveredOnly: values['undelivered-only'] === true,
      dryRun: values['dry-run'] === true,
      maxAttempts: ctx.config.maxAttempts,
      ...(maxCalls !== undefined && { maxCalls }),
      callRate: new CallRate(ctx.config.reconcileCallsPerSecond),
    });
    const verb = result.dry_run ? 'would claim' : 'claimed';
    return {
      json: result,
      text: `listed ${result.listed} event(s) at Stripe in ${result.calls} call(s), ${result.missing} missing here, ${verb} ${result.dry_run ? result.missing : result.claimed}${result.event_ids.length ? `:\n  ${result.event_ids.join('\n  ')}` : ''}${
        result.truncated ? `\nstopped after --max-calls ${result.calls}, before the start of --since: older events were not read` : ''
      }`,
    };
  },
});

function isReconcileLists(value: string): value is ReconcileLists {
  return ['snapshot', 'thin', 'both'].includes(value);
}
