// Which of our subscriptions a Stripe subscription belongs to. The link, subscriptions.
// stripe_subscription_id, is made once, from what this service created: the Checkout Session
// POST /api/subscriptions opened and whose id it stored, when that session's
// checkout.session.completed names the Stripe subscription it started. Nothing else links.
//
// Metadata is a claim, not a link: anyone who can write metadata in the Stripe account (a Dashboard
// user, another application's key) can write any of our ids into any Stripe object. So an event
// finds its row by the link first; metadata that names another row of ours refuses the event
// (PermanentError, both ids in the reason) instead of moving credits or a status between
// accounts; and metadata alone never links: an event that names an unlinked row of ours waits for
// that row's own checkout to link it, and fails when it never does.
import type { Transaction } from 'kysely';
import { isUniqueViolation, lockWaitKeys, PermanentError, quoted, RetryLaterError, type Wake } from '../../business-module.js';
import { SUBSCRIPTION_ID_KEY } from './stripe-schemas.js';
import { linkWaitKey, lockSubscription, sessionWaitKey } from './subscriptions.js';
import type { BillingDatabase, SubscriptionRow } from './tables.js';

const NAMES = `metadata.${SUBSCRIPTION_ID_KEY}`;

const unknownSubscription = (named: string, what: string) => new PermanentError(`unknown subscription ${quoted(named)} in the ${NAMES} of ${what}`);

/**
 * Our subscription linked to Stripe subscription `stripeSubscriptionId`, locked; undefined when it
 * is linked to none and `named` (our id from the object's metadata) names none. Throws a
 * PermanentError when the metadata contradicts a link (or names an unknown id), and a
 * RetryLaterError when it names a row of ours that is not linked yet: the checkout that links it
 * may arrive later, as Stripe delivers in any order, and wakes it. A linked subscription pays
 * nothing more than its lookup.
 *
 * Found unlinked, the locks are taken in the order the link takes them: the named row first (the
 * link holds it while it writes and wakes), then the link's wait key (src/events/event-waits.ts),
 * then the link is looked up again. The other way round, a link caught between its write and its
 * wake deadlocks with this: it waits for the key held here, while this waits for its row.
 */
export async function lockLinkedSubscription(
  tx: Transaction<BillingDatabase>,
  stripeSubscriptionId: string,
  named: string | undefined,
): Promise<SubscriptionRow | undefined> {
  const lockLinked = () => tx.selectFrom('subscriptions').selectAll().where('stripe_subscription_id', '=', stripeSubscriptionId).forUpdate().executeTakeFirst();
  const linked = await lockLinked();
  if (linked) return checkedAgainstMetadata(linked, stripeSubscriptionId, named);
  // Waits for a link being written to the named row, and then sees it.
  const row = named === undefined ? undefined : await lockSubscription(tx, named);
  await lockWaitKeys(tx, [linkWaitKey(stripeSubscriptionId)]);
  const linkedMeanwhile = row?.stripe_subscription_id === stripeSubscriptionId ? row : await lockLinked();
  if (linkedMeanwhile) return checkedAgainstMetadata(linkedMeanwhile, stripeSubscriptionId, named);
  if (named === undefined) return undefined;
  if (!row) throw unknownSubscription(named, `Stripe subscription ${stripeSubscriptionId}`);
  if (row.stripe_subscription_id !== null) {
    throw new PermanentError(
      `Stripe subscription ${stripeSubscriptionId} names ${row.subscription_id} in its ${NAMES}, but ${row.subscription_id} is linked to Stripe subscription ${row.stripe_subscription_id}: refused`,
    );
  }
  throw new RetryLaterError(
    `Stripe subscription ${stripeSubscriptionId} names ${row.subscription_id} in its ${NAMES}, but ${row.subscription_id} was never linked to it: ` +
      `waiting for the checkout.session.completed of ${row.subscription_id}'s Checkout Session ${row.checkout_session_id ?? '(none stored)'}, which links it`,
    { waitsFor: [linkWaitKey(stripeSubscriptionId)] },
  );
}

function checkedAgainstMetadata(linked: SubscriptionRow, stripeSubscriptionId: string, named: string | undefined): SubscriptionRow {
  if (named !== undefined && named !== linked.subscription_id) {
    throw new PermanentError(
      `Stripe subscription ${stripeSubscriptionId} is linked to ${linked.subscription_id}, but its ${NAMES} names ${quoted(named)}: refused`,
    );
  }
  return linked;
}

export interface CompletedCheckout {
  id: string;
  /** The Stripe subscription the session started; null before Stripe made one. */
  subscription: string | null;
  /** The Stripe customer it made or used: whom the subscription's meter events bill. */
  customer: string | null;
  /** Our id from the session's metadata, if any. */
  named: string | undefined;
}

/**
 * Links our subscription whose stored Checkout Session completed to the Stripe subscription the
 * session started, and returns it (locked); undefined for a session that is not ours (no row
 * stored it, and its metadata names none). The one place a link is made; the subscription's
 * events that arrived first wait for it, and are woken in the same transaction.
 */
export async function linkCheckoutSession(tx: Transaction<BillingDatabase>, wake: Wake, session: CompletedCheckout): Promise<SubscriptionRow | undefined> {
  const row = await lockByCheckoutSession(tx, session);
  if (!row || session.subscription === null || row.stripe_subscription_id === session.subscription) return row;
  const refused = (why: string) =>
    `Checkout Session ${session.id} of ${row.subscription_id} started Stripe subscription ${session.subscription}, but ${why}: refused`;
  if (row.stripe_subscription_id !== null)
    throw new PermanentError(refused(`${row.subscription_id} is linked to Stripe subscription ${row.stripe_subscription_id}`));
  const other = await tx.selectFrom('subscriptions').select('subscription_id').where('stripe_subscription_id', '=', session.subscription).executeTakeFirst();
  if (other) throw new PermanentError(refused(`that is linked to ${other.subscription_id}`));
  try {
    await tx
      .updateTable('subscriptions')
      .set({ stripe_subscription_id: session.subscription, stripe_customer_id: session.customer })
      .where('subscription_id', '=', row.subscription_id)
      .execute();
  } catch (error) {
    // Another transaction linked it to a row of ours between the look above and this write: the
    // unique key decided, and retrying would only meet it again.
    if (isUniqueViolation(error, 'subscriptions_stripe_subscription_id_key'))
      throw new PermanentError(refused('that was linked to another subscription of ours meanwhile'), { cause: error });
    throw error;
  }
  await wake(tx, [linkWaitKey(session.subscription)]);
  return { ...row, stripe_subscription_id: session.subscription, stripe_customer_id: session.customer };
}

/** Our subscription that stored this Checkout Session's id, locked; checked against the metadata. */
async function lockByCheckoutSession(tx: Transaction<BillingDatabase>, session: CompletedCheckout): Promise<SubscriptionRow | undefined> {
  const stored = await tx.selectFrom('subscriptions').selectAll().where('checkout_session_id', '=', session.id).forUpdate().executeTakeFirst();
  if (stored) {
    if (session.named !== undefined && session.named !== stored.subscription_id) {
      throw new PermanentError(
        `Checkout Session ${session.id} was opened for ${stored.subscription_id}, but its ${NAMES} names ${quoted(session.named)}: refused`,
      );
    }
    return stored;
  }
  if (session.named === undefined) return undefined;
  const row = await lockSubscription(tx, session.named);
  if (!row) throw unknownSubscription(session.named, `Checkout Session ${session.id}`);
  // Stored while this transaction waited for the row's lock.
  if (row.checkout_session_id === session.id) return row;
  if (row.checkout_session_id !== null) {
    throw new PermanentError(
      `Checkout Session ${session.id} names ${row.subscription_id} in its ${NAMES}, but ${row.subscription_id} opened Checkout Session ${row.checkout_session_id}: refused`,
    );
  }
  // POST /api/subscriptions stores the id once Stripe answers; a request that died in between
  // stores it when retried with the same Idempotency-Key (Stripe answers with the same session),
  // and wakes this event. The row lock, taken before the look, keeps the two in turn.
  throw new RetryLaterError(
    `Checkout Session ${session.id} names ${row.subscription_id} in its ${NAMES}, but ${row.subscription_id} has stored no Checkout Session id: waiting for the Checkout Session id (a retry of POST /api/subscriptions with the same Idempotency-Key stores it)`,
    {
      waitsFor: [sessionWaitKey(row.subscription_id)],
    },
  );
}
