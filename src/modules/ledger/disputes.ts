// Disputes (chargebacks) of purchases that granted credits: the one record of each dispute
// (disputes, sql/ledger/0022) for every module that sells credits, and DISPUTE_POLICY. A dispute
// is its own path, not a refund: Stripe sends no charge.refunded when a dispute withdraws the
// funds, and a won dispute gives them back (charge.dispute.funds_reinstated).
//
// Stripe's dispute events arrive in any order, repeated, or as second Event objects for one
// happening. So the row keeps facts that only ever become true, whichever event tells them:
// funds withdrawn (funds_withdrawn, or a reinstatement, which reverses one, or the status `lost`)
// and funds reinstated. A dispute claims its purchase's credits while withdrawn and not
// reinstated; settleDispute moves the purchase's revocation to what the claims and its refunds
// call for (moveRevocation), so a repeat converges on the same credits and a
// reinstatement seen first means the credits are never taken.
//
// The caller holds its purchase's row lock, which serialises every event of the purchase's
// disputes and refunds. Stripe allows one dispute per charge; a purchase is paid by one charge, so
// one dispute per purchase is what we expect, but the claim is asked of all of them.
import { sql, type Transaction } from 'kysely';
import { z } from 'zod';
import {
  defineSettings,
  lockWaitKeys,
  objectOf,
  RetryLaterError,
  stripeDispute,
  type Database,
  type EventHandler,
  type Notifications,
  type StripeDispute,
  type StripeEventRow,
} from '../../business-module.js';
import { moveRevocation, type CreditsMoved, type PaidClaim, type Revocation } from './revocations.js';
import { paymentWaitKey, unfinishedPaymentEvent } from './payment-waits.js';
import { notifyAccounts } from './account-notifications.js';
import { revocationTarget, type RefundPolicy } from './refund-policy.js';
import { withLedgerTables } from './tables.js';

const DISPUTE_POLICIES = ['revoke', 'ignore'] as const;
export type DisputePolicy = (typeof DISPUTE_POLICIES)[number];

/** DISPUTE_POLICY, listed in the settings of each module that sells credits: 'revoke' (default) takes a disputed purchase's unused credits back while its funds are withdrawn; 'ignore' records disputes only. */
export const disputePolicySettings = defineSettings({
  disputePolicy: { env: 'DISPUTE_POLICY', schema: z.enum(DISPUTE_POLICIES), example: 'revoke', default: 'revoke' satisfies DisputePolicy },
});

/** The dispute event types every module that sells credits handles. */
export const DISPUTE_EVENT_TYPES = [
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.funds_withdrawn',
  'charge.dispute.funds_reinstated',
  'charge.dispute.closed',
] as const;

interface DisputeChange {
  /** Whether the dispute claimed its purchase's credits before this event, and after it. */
  wasClaiming: boolean;
  claiming: boolean;
  status: string;
}

/**
 * Records what `event` tells of `dispute` on `purchase` (the module's key of what the charge paid,
 * e.g. `order:<id>`): the facts it establishes, and Stripe's status when the event is not older
 * than the newest seen. Returns whether the dispute's claim on the purchase changed.
 */
async function recordDispute(
  transaction: Transaction<Database>,
  input: {
    dispute: StripeDispute & { payment_intent: string };
    event: Pick<StripeEventRow, 'type' | 'stripe_created_at'>;
    purchase: string;
    accountId: string;
  },
): Promise<DisputeChange> {
  const { dispute, event } = input;
  const tx = withLedgerTables(transaction);
  const reinstated = event.type === 'charge.dispute.funds_reinstated';
  const withdrawn = reinstated || event.type === 'charge.dispute.funds_withdrawn' || dispute.status === 'lost';
  const before = await tx
    .selectFrom('disputes')
    .select(['funds_withdrawn', 'funds_reinstated'])
    .where('dispute_id', '=', dispute.id)
    .forUpdate()
    .executeTakeFirst();
  const after = await tx
    .insertInto('disputes')
    .values({
      dispute_id: dispute.id,
      charge_id: dispute.charge,
      payment_intent_id: dispute.payment_intent,
      purchase: input.purchase,
      account_id: input.accountId,
      status: dispute.status,
      status_at: event.stripe_created_at,
      funds_withdrawn: withdrawn,
      funds_reinstated: reinstated,
    })
    .onConflict((oc) =>
      oc.column('dispute_id').doUpdateSet({
        // Stripe's status as of the newest event: an older delivery never overwrites it.
        status: sql`case when excluded.status_at >= disputes.status_at then excluded.status else disputes.status end`,
        status_at: sql`greatest(disputes.status_at, excluded.status_at)`,
        funds_withdrawn: sql`disputes.funds_withdrawn or excluded.funds_withdrawn`,
        funds_reinstated: sql`disputes.funds_reinstated or excluded.funds_reinstated`,
        updated_at: sql`now()`,
      }),
    )
    .returning(['funds_withdrawn', 'funds_reinstated', 'status'])
    .executeTakeFirstOrThrow();
  const claims = (row: { funds_withdrawn: boolean; funds_reinstated: boolean } | undefined) =>
    row !== undefined && row.funds_withdrawn && !row.funds_reinstated;
  return { wasClaiming: claims(before), claiming: claims(after), status: after.status };
}

/** Whether any dispute of `purchase` claims its credits (funds withdrawn, not reinstated). */
async function purchaseDisputed(transaction: Transaction<Database>, purchase: string): Promise<boolean> {
  const row = await withLedgerTables(transaction)
    .selectFrom('disputes')
    .select('dispute_id')
    .where('purchase', '=', purchase)
    .where('funds_withdrawn', '=', true)
    .where('funds_reinstated', '=', false)
    .executeTakeFirst();
  return row !== undefined;
}

/** Adds what a dispute's event moved to the dispute's record: credits taken back, or given back. */
async function noteDisputeCredits(transaction: Transaction<Database>, disputeId: string, moved: CreditsMoved): Promise<void> {
  if (moved.taken === 0 && moved.returned === 0) return;
  await withLedgerTables(transaction)
    .updateTable('disputes')
    .set({ credits_taken: sql`credits_taken + ${moved.taken}`, credits_returned: sql`credits_returned + ${moved.returned}`, updated_at: sql`now()` })
    .where('dispute_id', '=', disputeId)
    .execute();
}

/**
 * Adds what a reversed run paid to a disputed purchase's revocation (revocations.ts) to the
 * credits its claiming dispute took: a reinstatement gives back what its purchase's revocation
 * holds beyond the refunds' claim, and never more than its dispute took. A purchase no dispute
 * claims was paid for its refunds: nothing to note.
 */
export async function noteDisputesPaid(transaction: Transaction<Database>, paid: readonly PaidClaim[]): Promise<void> {
  if (paid.length === 0) return;
  await sql`
    update disputes as d set credits_taken = d.credits_taken + p.paid, updated_at = now()
    from unnest(${paid.map((claim) => claim.purchase)}::text[], ${paid.map((claim) => claim.paid)}::int[]) as p(purchase, paid)
    where d.dispute_id = (
      select c.dispute_id from disputes as c
      where c.purchase = p.purchase and c.funds_withdrawn and not c.funds_reinstated
      order by c.created_at, c.dispute_id
      limit 1
    )`.execute(transaction);
}

type Policies = { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy };

/**
 * The handler of the dispute types for a module that sells credits. `lockPurchase` finds, and
 * locks, the module's purchase that `paymentIntent` paid (none: not the module's, or not yet);
 * `mayStillPay` tells whether the module has a purchase in flight that a payment it has not
 * learnt of yet could turn out to pay (an order whose Checkout Session is open); `what` names
 * such a purchase in the reason of a dispute that is not the module's (`order`).
 *
 * A dispute carries no metadata of ours, only its PaymentIntent, and can arrive before the
 * payment's own event (Stripe retrying that one after an outage, or reconcile claiming it after a
 * failover lost it). So a dispute of a payment no purchase names waits for that payment while
 * the payment's event is stored unfinished, or while the module has a purchase in flight; it is
 * applied when the payment is recorded, whichever came first. With nothing in flight it is
 * another sale's, and ends 'ignored' at once.
 */
export function disputeHandler(
  policies: Policies,
  notifications: Notifications,
  what: string,
  purchases: {
    lockPurchase: (tx: Transaction<Database>, paymentIntent: string) => Promise<DisputedPurchase | undefined>;
    mayStillPay: (tx: Transaction<Database>) => Promise<boolean>;
  },
): EventHandler {
  return async (tx, event) => {
    const dispute = objectOf(stripeDispute, event);
    const paymentIntent = dispute.payment_intent;
    if (paymentIntent === null)
      return { status: 'ignored', reason: `dispute ${dispute.id}: charge ${dispute.charge} has no PaymentIntent, so is no payment of ours` };
    let purchase = await purchases.lockPurchase(tx, paymentIntent);
    if (!purchase) {
      // Before the look that may decide to wait: the payment's wake cannot slip in between.
      const key = paymentWaitKey(paymentIntent);
      await lockWaitKeys(tx, [key]);
      purchase = await purchases.lockPurchase(tx, paymentIntent);
      if (!purchase) {
        const unlinked = `dispute ${dispute.id}: no ${what} paid by payment intent ${paymentIntent}`;
        const awaited = await unfinishedPaymentEvent(tx, paymentIntent);
        if (awaited !== undefined)
          throw new RetryLaterError(`${unlinked} (yet): waiting for ${awaited}, its payment's event`, { waitsFor: [key], ignoreWhenExhausted: true });
        if (await purchases.mayStillPay(tx))
          throw new RetryLaterError(
            `${unlinked} (yet): waiting for its payment's event, as ${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what} of ours is still being paid`,
            {
              waitsFor: [key],
              ignoreWhenExhausted: true,
            },
          );
        return { status: 'ignored', reason: `${unlinked}, and none is being paid` };
      }
    }
    await settleDispute(tx, notifications, policies, { dispute: { ...dispute, payment_intent: paymentIntent }, event, purchase });
    return { status: 'processed' };
  };
}

/** What a selling module knows of the purchase a dispute is about, and how it keeps its revocation. */
export interface DisputedPurchase {
  /** The module's key of the purchase, e.g. `order:<order_id>`. */
  key: string;
  accountId: string;
  /** What the refund policy reads: the amount paid, the credits granted, the amount refunded so far. */
  amount: number;
  credits: number;
  refundedAmount: number;
  /** Its revocation now, and how to store a new one in the module's own table. */
  revocation: Revocation;
  storeRevocation(revocation: Revocation): Promise<void>;
  /** The notification types for the dispute's start and reinstatement, and the fields they carry. */
  notify: { disputed: string; reinstated: string; data: Readonly<Record<string, unknown>> };
}

/**
 * Applies one dispute event to the purchase it is about, under the caller's lock of the purchase:
 * records the dispute, and when its claim on the purchase starts or stops, moves the purchase's
 * revocation to what its refunds and disputes call for (DISPUTE_POLICY=revoke) and tells the app,
 * once per dispute and direction (the notification's key is the dispute's).
 */
async function settleDispute(
  tx: Transaction<Database>,
  notifications: Notifications,
  policies: Policies,
  input: {
    dispute: StripeDispute & { payment_intent: string };
    event: Pick<StripeEventRow, 'event_id' | 'type' | 'stripe_created_at'>;
    purchase: DisputedPurchase;
  },
): Promise<void> {
  const { dispute, event, purchase } = input;
  const change = await recordDispute(tx, { dispute, event, purchase: purchase.key, accountId: purchase.accountId });
  if (change.claiming === change.wasClaiming) return;
  let moved: CreditsMoved = { taken: 0, returned: 0 };
  if (policies.disputePolicy === 'revoke') {
    const disputed = await purchaseDisputed(tx, purchase.key);
    const target = Math.max(revocationTarget(policies.refundPolicy, purchase, purchase.refundedAmount), disputed ? purchase.credits : 0);
    const revocation = await moveRevocation(tx, purchase.accountId, purchase.revocation, target);
    if (revocation.target !== purchase.revocation.target) await purchase.storeRevocation(revocation);
    moved = { taken: revocation.taken, returned: revocation.returned };
    await noteDisputeCredits(tx, dispute.id, moved);
  }
  const data = { ...purchase.notify.data, dispute_id: dispute.id, dispute_status: change.status };
  await notifyAccounts(tx, notifications, [
    change.claiming
      ? {
          type: purchase.notify.disputed,
          key: `${purchase.notify.disputed}:${dispute.id}`,
          accountId: purchase.accountId,
          creditsDelta: -moved.taken,
          eventId: event.event_id,
          data: { ...data, credits_revoked: moved.taken },
        }
      : {
          type: purchase.notify.reinstated,
          key: `${purchase.notify.reinstated}:${dispute.id}`,
          accountId: purchase.accountId,
          creditsDelta: moved.returned,
          eventId: event.event_id,
          data: { ...data, credits_returned: moved.returned },
        },
  ]);
}
