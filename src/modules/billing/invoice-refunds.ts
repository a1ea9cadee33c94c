// charge.refunded for a subscription's payment: the invoice it paid (invoice_payments, from
// invoice_payment.paid) keeps the largest amount Stripe has reported refunded, and the credits of
// that period are taken back under the same REFUND_POLICY as packages, converging on one target
// per invoice, so a repeated or reordered refund event never takes back twice. Each growth of the
// amount refunded is told to the app once, as subscription.period_refunded (docs/notifications.md).
import { objectOf, refundedCharge, RetryLaterError, type EventHandler, type Notifications } from '../../business-module.js';
import { notifyAccounts, revocationTarget, takeBackCredits, type RefundPolicy } from '../ledger/index.js';
import { withBillingTables } from './tables.js';

export function invoiceChargeRefunded(policy: RefundPolicy, notifications: Notifications): EventHandler {
  return async (transaction, event) => {
    const charge = objectOf(refundedCharge, event);
    if (!charge.payment_intent) return { status: 'ignored', reason: `charge ${charge.id} has no PaymentIntent: not a payment of ours` };
    const tx = withBillingTables(transaction);
    const grant = await tx
      .selectFrom('invoice_grants')
      .selectAll()
      .where('invoice_id', '=', (eb) => eb.selectFrom('invoice_payments').select('invoice_id').where('payment_intent_id', '=', charge.payment_intent!))
      .forUpdate()
      .executeTakeFirst();
    // The refund can arrive before the payment's link or grant; a refund of a payment that is
    // not ours never finds one and ends 'ignored' when its attempts run out.
    if (!grant) throw new RetryLaterError(`no granted invoice paid by payment intent ${charge.payment_intent} (yet)`, { ignoreWhenExhausted: true });
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
