// Our copy of a Stripe subscription's state (status, current period end, cancel_at_period_end,
// whether collection is paused), kept true to Stripe whatever order its events arrive in. Each
// state is stamped with when it was true: an event's `created`, or the second we began to fetch
// it. A state older than the one held is dropped, a newer one replaces it.
//
// Stamps have one-second resolution, so two events of one second cannot be ordered (a
// subscription created and made active in the same second). When such a tie carries a different
// state, neither is trusted: a job asks Stripe for the subscription as it is now
// (refreshSubscriptionTask), as dj-stripe and Pay do for every event. A fetch wins over every
// state of an earlier second, and over one of its own second that we held before it began (Stripe
// had created that event before we fetched). A state of its second that arrived while it was on
// its way may be newer than what it read (the customer changed something just after): a tie too,
// and the fetch is made again a second later. Stamps compare our clock (a fetch's) with Stripe's
// (an event's): the host's clock must be kept in time (NTP), as for any webhook signature.
import { createHash } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { addModuleJob, modeMismatch, type ModuleContext, type Notifications } from '../../business-module.js';
import { notifyAccounts } from '../ledger/index.js';
import { stripeSubscription, type StripeSubscription } from './stripe-schemas.js';
import { lockSubscription } from './subscriptions.js';
import { withBillingTables, type BillingDatabase, type SubscriptionRow } from './tables.js';

export const REFRESH_TASK = 'billing_refresh_subscription';
// Stripe may be down for a while; the job retries with graphile-worker's backoff meanwhile.
const REFRESH_MAX_ATTEMPTS = 12;

export interface SubscriptionState {
  status: string;
  currentPeriodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  /** While Stripe does not collect: how it treats the invoices meanwhile, and when it resumes by itself. */
  pause: { behavior: string; resumesAt: Date | null } | null;
}

const timeOf = (seconds: number | null | undefined): Date | null => (seconds == null ? null : new Date(seconds * 1000));

export function stateOf(subscription: StripeSubscription): SubscriptionState {
  const ends = subscription.items.data.flatMap((item) => (item.current_period_end === undefined ? [] : [item.current_period_end]));
  return {
    status: subscription.status,
    currentPeriodEnd: timeOf(ends.length > 0 ? Math.max(...ends) : subscription.current_period_end),
    cancelAtPeriodEnd: subscription.cancel_at_period_end,
    pause: subscription.pause_collection
      ? { behavior: subscription.pause_collection.behavior, resumesAt: timeOf(subscription.pause_collection.resumes_at) }
      : null,
  };
}

export type StateChange = 'applied' | 'older' | 'unchanged' | 'tie';

/** Who applies a state: an event (which one) or a fetch; a change is told to the app as subscription.updated. */
export interface StateSource {
  readonly source: 'event' | 'fetch';
  readonly eventId: string | null;
  readonly notifications: Notifications;
}

/**
 * Applies `state`, true at `at` (whole seconds: an event's `created`, or when a fetch began), to the
 * locked subscription row. A different state of the same second ties, unless it is a fetch and the
 * one held was applied before the fetch began. A state that differs from the one held is told to
 * the app, once per state and second.
 */
export async function applyState(
  tx: Transaction<BillingDatabase>,
  subscription: SubscriptionRow,
  state: SubscriptionState,
  at: Date,
  { source, eventId, notifications }: StateSource,
): Promise<StateChange> {
  const held = subscription.stripe_state_at?.getTime();
  const when = Math.floor(at.getTime() / 1000) * 1000;
  if (held !== undefined && when < held) return 'older';
  const columns = {
    status: state.status,
    current_period_end: state.currentPeriodEnd,
    cancel_at_period_end: state.cancelAtPeriodEnd,
    pause_behavior: state.pause?.behavior ?? null,
    pause_resumes_at: state.pause?.resumesAt ?? null,
  };
  const same = Object.entries(columns).every(([column, value]) => sameValue(subscription[column as keyof typeof columns], value));
  if (held !== undefined && when === held && !(source === 'fetch' && subscription.updated_at < at)) return same ? 'unchanged' : 'tie';
  await tx
    .updateTable('subscriptions')
    .set({ ...columns, stripe_state_at: new Date(when), updated_at: sql`now()` })
    .where('subscription_id', '=', subscription.subscription_id)
    .execute();
  if (same) return 'unchanged';
  const told = {
    subscription_id: subscription.subscription_id,
    status: columns.status,
    current_period_end: columns.current_period_end?.toISOString() ?? null,
    cancel_at_period_end: columns.cancel_at_period_end,
    pause_collection: state.pause && { behavior: state.pause.behavior, resumes_at: state.pause.resumesAt?.toISOString() ?? null },
  };
  await notifyAccounts(tx, notifications, [
    {
      type: 'subscription.updated',
      // One change: from the state held to this one, true from this second (a fetch may apply a
      // state of the second held, so A, B and A again within one second are three changes).
      key: `subscription.updated:${subscription.subscription_id}:${when / 1000}:${digest(subscription, columns)}`,
      accountId: subscription.account_id,
      creditsDelta: 0,
      eventId,
      data: told,
    },
  ]);
  return 'applied';
}

/** The held state and the new one, as a key's last part. */
function digest(held: SubscriptionRow, state: Record<string, string | boolean | Date | null>): string {
  const of = (row: Record<string, unknown>) =>
    Object.keys(state).map((column) => {
      const value = row[column];
      return value instanceof Date ? value.getTime() : value;
    });
  return createHash('sha256')
    .update(JSON.stringify([of(held), of(state)]))
    .digest('base64url')
    .slice(0, 22);
}

function sameValue(held: string | boolean | Date | null, value: string | boolean | Date | null): boolean {
  return held instanceof Date && value instanceof Date ? held.getTime() === value.getTime() : held === value;
}

/**
 * Queues a fetch of the subscription from Stripe, in the caller's transaction; a burst makes one
 * job. `inSeconds`: not before then (a fetch that tied waits for the next second).
 */
export async function requestRefresh(
  tx: Transaction<BillingDatabase>,
  subscription: SubscriptionRow,
  stripeSubscriptionId: string,
  inSeconds = 0,
): Promise<void> {
  await addModuleJob(
    tx,
    REFRESH_TASK,
    { subscriptionId: subscription.subscription_id, stripeSubscriptionId },
    {
      key: `${REFRESH_TASK}:${subscription.subscription_id}`,
      maxAttempts: REFRESH_MAX_ATTEMPTS,
      inSeconds,
    },
  );
}

const refreshPayload = z.object({ subscriptionId: z.string(), stripeSubscriptionId: z.string() });

/** graphile-worker task: fetches the subscription from Stripe and applies it as of when the fetch began. */
export function refreshSubscriptionTask({ db, stripeCalls, livemode, logger, notifications }: ModuleContext<unknown>): Task {
  const billing = withBillingTables(db);
  return async (payload) => {
    const job = refreshPayload.safeParse(payload);
    if (!job.success) return void logger.error({ payload }, 'refresh job without a subscription: dropped');
    const { subscriptionId, stripeSubscriptionId } = job.data;
    const began = new Date();
    // A busy or failing Stripe throws here: graphile-worker retries the job with its backoff.
    const answer = await stripeCalls.run('subscription_retrieve', (stripe) => stripe.subscriptions.retrieve(stripeSubscriptionId));
    // Fetching again cannot change its mode: dropped, as an event of the other mode fails at once.
    const mismatch = modeMismatch(`subscription ${stripeSubscriptionId}`, answer.livemode, livemode);
    if (mismatch !== undefined) return void logger.error({ subscriptionId, stripeSubscriptionId }, `${mismatch}: not applied`);
    const fetched = stripeSubscription.parse(answer);
    const change = await billing.transaction().execute(async (tx) => {
      const subscription = await lockSubscription(tx, subscriptionId);
      // Only the linked Stripe subscription's state is ours: a job the previous release queued
      // from an event's metadata may name another one.
      if (subscription?.stripe_subscription_id !== stripeSubscriptionId) return undefined;
      const applied = await applyState(tx, subscription, stateOf(fetched), began, { source: 'fetch', eventId: null, notifications });
      if (applied === 'tie') await requestRefresh(tx, subscription, stripeSubscriptionId, 1);
      return applied;
    });
    logger.info({ subscriptionId, stripeSubscriptionId, change: change ?? 'no subscription of ours linked to it' }, 'subscription refreshed from Stripe');
  };
}
