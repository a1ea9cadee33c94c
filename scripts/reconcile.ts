// npm run reconcile: claim events Stripe has but we never received (Events API, last 30 days).
import { sinceOption } from '../src/cli/duration.js';
import { runScript, UsageError } from '../src/cli/script.js';
import { reconcileEvents, STRIPE_EVENTS_RETENTION_DAYS } from '../src/reconcile/reconcile-events.js';
import { createStripeClient } from '../src/stripe/client.js';

runScript({
  usage: `usage: npm run reconcile -- --since <duration> [--undelivered-only] [--dry-run] [--json]

Lists Stripe's events created within --since (e.g. 3d; at most ${STRIPE_EVENTS_RETENTION_DAYS}d, all Stripe keeps) and claims
every one we do not have, through the same path as the webhook; the worker then fulfils them.
--undelivered-only asks Stripe only for events it failed to deliver. Running it twice changes
nothing. Needs STRIPE_SECRET_KEY (and honours STRIPE_API_BASE).`,
  options: {
    since: { type: 'string' },
    'undelivered-only': { type: 'boolean' },
    'dry-run': { type: 'boolean' },
  },
  async run({ values }, ctx) {
    if (values.since === undefined) throw new UsageError('--since is required: a duration like 12h or 3d');
    const since = sinceOption(values.since, '--since', {
      maxDays: STRIPE_EVENTS_RETENTION_DAYS,
      example: '3d',
      reason: `Stripe's Events API keeps ${STRIPE_EVENTS_RETENTION_DAYS} days`,
    });
    if (!ctx.config.stripeSecretKey) throw new UsageError('STRIPE_SECRET_KEY is required: reconcile reads Stripe\'s Events API');
    const stripe = createStripeClient(ctx.config.stripeSecretKey, ctx.config.stripeApiBase, { timeoutMs: ctx.config.stripeTimeoutMs });
    const { db } = await ctx.database();
    const result = await reconcileEvents(db, stripe, {
      since,
      undeliveredOnly: values['undelivered-only'] === true,
      dryRun: values['dry-run'] === true,
      maxAttempts: ctx.config.maxAttempts,
    });
    const verb = result.dry_run ? 'would claim' : 'claimed';
    return {
      json: result,
      text: `listed ${result.listed} event(s) at Stripe, ${result.missing} missing here, ${verb} ${result.dry_run ? result.missing : result.claimed}${result.event_ids.length ? `:\n  ${result.event_ids.join('\n  ')}` : ''}`,
    };
  },
});
