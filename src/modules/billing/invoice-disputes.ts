// charge.dispute.* for a subscription's payment: the period is the invoice grant its PaymentIntent
// paid (invoice_payment.paid's link). As for a package's order (credits' charge-disputed.ts), the
// ledger's disputeHandler applies each event, on the same revocation target as the period's
// refunds (invoice_grants.revocation_target), so neither takes what the other took. The app hears
// subscription.period_disputed and subscription.period_dispute_reinstated, once each. A dispute
// of a PaymentIntent no granted invoice names waits for that payment while a subscription of ours
// may still be paying (a period's invoice.paid can be late, as a first one can), and is another
// sale's, 'ignored' at once, when none is.
import { sql, type Transaction } from 'kysely';
import { WAIT_HOURS, type Database, type Notifications } from '../../business-module.js';
import { disputeHandler, shareOut, type DisputedPurchase, type DisputePolicy, type RefundPolicy, type ShortfallSettler } from '../ledger/index.js';
import { lockGrantOfPayment } from './invoice-refunds.js';
import { withBillingTables } from './tables.js';

export function invoiceChargeDisputed(policies: { refundPolicy: RefundPolicy; disputePolicy: DisputePolicy }, notifications: Notifications) {
  return disputeHandler(policies, notifications, 'granted invoice', { lockPurchase, mayStillPay });
}

/** The grant of the invoice its PaymentIntent paid, locked. */
async function lockPurchase(transaction: Transaction<Database>, paymentIntent: string): Promise<DisputedPurchase | undefined> {
  const tx = withBillingTables(transaction);
  const grant = await lockGrantOfPayment(tx, paymentIntent);
  if (!grant) return undefined;
  return {
    key: invoicePurchase(grant.invoice_id),
    accountId: grant.account_id,
    amount: grant.amount_paid,
    credits: grant.credits,
    refundedAmount: grant.refunded_amount,
    revocation: { target: grant.revocation_target, revoked: grant.revoked_credits },
    storeRevocation: async ({ target, revoked }) => {
      await tx.updateTable('invoice_grants').set({ revocation_target: target, revoked_credits: revoked }).where('invoice_id', '=', grant.invoice_id).execute();
    },
    notify: {
      disputed: 'subscription.period_disputed',
      reinstated: 'subscription.period_dispute_reinstated',
      data: { subscription_id: grant.subscription_id, invoice_id: grant.invoice_id },
    },
  };
}

/**
 * A subscription of ours that pays or is about to: one whose Stripe status still bills, or one
 * whose Checkout Session was opened in the last WAIT_HOURS and is not linked yet. A dispute of a
 * payment we have not seen may be of its invoice, whose invoice.paid is late.
 */
async function mayStillPay(transaction: Transaction<Database>): Promise<boolean> {
  const paying = await withBillingTables(transaction)
    .selectFrom('subscriptions')
    .select('subscription_id')
    .where((eb) =>
      eb.or([
        eb('status', 'in', ['active', 'trialing', 'past_due', 'unpaid', 'incomplete']),
        eb.and([
          eb('status', '=', 'pending'),
          eb('checkout_session_id', 'is not', null),
          eb('created_at', '>', sql<Date>`now() - make_interval(hours => ${WAIT_HOURS})`),
        ]),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
  return paying !== undefined;
}

/**
 * The billing module's ShortfallSettler (src/modules/ledger/revocations.ts): the account's paid
 * periods whose refunds and disputes took back fewer credits than they claim, locked as those
 * lock them (their invoice_grants rows, before the balance), and paid, the earliest granted first.
 */
export const settlePeriodShortfalls: ShortfallSettler = async (transaction, accountId, budget) => {
  const tx = withBillingTables(transaction);
  const shortfalls = await tx
    .selectFrom('invoice_grants')
    .select(['invoice_id', sql<number>`revocation_target - revoked_credits`.as('owed')])
    .where('account_id', '=', accountId)
    .whereRef('revoked_credits', '<', 'revocation_target')
    .orderBy('granted_at')
    .orderBy('invoice_id')
    .forUpdate()
    .execute();
  const shares = shareOut(shortfalls, budget);
  if (shares.length === 0) return [];
  await sql`
    update invoice_grants as g set revoked_credits = g.revoked_credits + s.paid
    from unnest(${shares.map((s) => s.invoice_id)}::text[], ${shares.map((s) => s.paid)}::int[]) as s(invoice_id, paid)
    where g.invoice_id = s.invoice_id`.execute(tx);
  return shares.map((share) => ({ purchase: invoicePurchase(share.invoice_id), paid: share.paid }));
};

/** A paid period as its disputes name it (the ledger's disputes.purchase). */
const invoicePurchase = (invoiceId: string) => `invoice:${invoiceId}`;
