// charge.refunded for a subscription's payment: the invoice it paid (invoice_payments, from
// invoice_payment.paid) keeps the largest amount Stripe has reported refunded, and the credits of
// that period are taken back under the same REFUND_POLICY as packages, converging on one target
// per invoice, so a repeated or reordered refund event never takes back twice. Each growth of the
// amount refunded is told to the app once, as subscription.period_refunded (docs/notifications.md).
// A charge linked to no grant is judged by what it carries (the ledger's chargeOwnership): another
// sale's ends 'ignored' at once, one that may be an invoice's of ours waits for its link.
import type { Transaction } from 'kysely';
import {
  lockWaitKeys,
  objectOf,
  PermanentError,
  quoted,
  refundedCharge,
  RetryLaterError,
  type EventHandler,
  type FinishOutcome,
  type Notifications,
  type RefundedCharge,
} from '../../business-module.js';
import { chargeOwnership, notifyAccounts, paymentWaitKey, revocationTarget, takeBackCredits, type RefundPolicy } from '../ledger/index.js';
import { findSubscription, invoiceWaitKey } from './subscriptions.js';
import { withBillingTables, type BillingDatabase, type InvoiceGrantRow } from './tables.js';

export function invoiceChargeRefunded(policy: RefundPolicy, notifications: Notifications): EventHandler {
  return async (transaction, event) => {
    const charge = objectOf(refundedCharge, event);
    const tx = withBillingTables(transaction);
    let grant = await lockGrantOfPayment(tx, charge.payment_intent, charge.invoice);
    if (!grant && grantWaitKeys(charge).length > 0) {
      // Before the look that may decide to wait: the payment's wake cannot slip in between.
      await lockWaitKeys(transaction, grantWaitKeys(charge));
      grant = await lockGrantOfPayment(tx, charge.payment_intent, charge.invoice);
    }
    if (!grant) return unlinkedCharge(tx, charge);
    const refunded = Math.min(grant.amount_paid, Math.max(grant.refunded_amount, charge.amount_refunded));
    const target = Math.max(grant.revocation_target, revocationTarget(policy, { amount: grant.amount_paid, credits: grant.credits }, refunded));
    const owed = target - grant.revocation_target;
    const taken = owed > 0 ? await takeBackCredits(tx, grant.account_id, owed) : 0;
    if (refunded !== grant.refunded_amount || owed > 0) {
      await tx
        .updateTable('invoice_grants')
        .set({ refunded_amount: refunded, revocation_target: target, revoked_credits: grant.revoked_credits + taken })
        .where('invoice_id', '=', grant.invoice_id)
        .execute();
    }
    if (refunded > grant.refunded_amount) {
      await notifyAccounts(tx, notifications, [
        {
          type: 'subscription.period_refunded',
          key: `subscription.period_refunded:${grant.invoice_id}:${refunded}`,
          accountId: grant.account_id,
          creditsDelta: -taken,
          eventId: event.event_id,
          data: {
            subscription_id: grant.subscription_id,
            invoice_id: grant.invoice_id,
            refund_id: charge.refunds?.data[0]?.id ?? null,
            credits_revoked: taken,
            amount_refunded: refunded,
          },
        },
      ]);
    }
    return { status: 'processed' };
  };
}

/**
 * The grant of the invoice a payment paid, locked: found by the PaymentIntent's link
 * (invoice_payment.paid), or by the invoice an older API version names on the charge.
 */
export async function lockGrantOfPayment(
  tx: Transaction<BillingDatabase>,
  paymentIntent: string | null,
  invoice?: string | null,
): Promise<InvoiceGrantRow | undefined> {
  if (paymentIntent === null && typeof invoice !== 'string') return undefined;
  return tx
    .selectFrom('invoice_grants')
    .selectAll()
    .where((eb) =>
      eb.or([
        ...(paymentIntent === null
          ? []
          : [eb('invoice_id', '=', eb.selectFrom('invoice_payments').select('invoice_id').where('payment_intent_id', '=', paymentIntent))]),
        ...(typeof invoice === 'string' ? [eb('invoice_id', '=', invoice)] : []),
      ]),
    )
    .forUpdate()
    .executeTakeFirst();
}

/** What would find a charge's grant, and so wakes a refund waiting for it: its PaymentIntent's link, or the invoice an older API version names. */
function grantWaitKeys(charge: RefundedCharge): string[] {
  return [
    ...(charge.payment_intent === null ? [] : [paymentWaitKey(charge.payment_intent)]),
    ...(typeof charge.invoice === 'string' ? [invoiceWaitKey(charge.invoice)] : []),
  ];
}

/** A charge that no granted invoice is linked to: not ours (ignored), maybe ours and early (wait), or a wrong claim (refused). */
async function unlinkedCharge(tx: Transaction<BillingDatabase>, charge: RefundedCharge): Promise<FinishOutcome> {
  const whose = chargeOwnership(charge);
  const ungranted = charge.payment_intent === null ? `charge ${charge.id}` : `no granted invoice paid by payment intent ${charge.payment_intent}`;
  if (whose.verdict === 'not_ours') return { status: 'ignored', reason: `${ungranted}: ${whose.reason}` };
  // With neither a PaymentIntent nor an invoice, no grant can ever be found for it.
  const waitsFor = grantWaitKeys(charge);
  if (waitsFor.length === 0) return { status: 'ignored', reason: `${ungranted}: it names neither a PaymentIntent nor an invoice` };
  switch (whose.verdict) {
    case 'cannot_tell':
      // The refund can arrive before the payment's link or grant; if it never does, it was not ours.
      throw new RetryLaterError(`${ungranted} (yet): ${whose.reason}`, { waitsFor, ignoreWhenExhausted: true });
    case 'ours': {
      if (whose.subscriptionId === undefined) return { status: 'ignored', reason: `${whose.reason}: a package's payment, not a subscription's` };
      const named = await findSubscription(tx, whose.subscriptionId);
      if (!named) throw new PermanentError(`unknown subscription ${quoted(whose.subscriptionId)} in the metadata of charge ${charge.id}`);
      throw new RetryLaterError(`${whose.reason}, but ${ungranted} (yet): waiting for the invoice of ${named.subscription_id} it paid`, { waitsFor });
    }
  }
}
