// Whose charge is it, told from the charge alone. One Stripe account also carries sales this
// service never started (Payment Links, Dashboard invoices, other apps): their refunds and
// disputes are not ours, and must end 'ignored' at once rather than wait hours for a payment of
// ours that will never come (docs/design.md, "Not ours is not a failure").
//
// A module first looks for its own link (the order that a PaymentIntent paid, the invoice it
// paid): a link decides, whatever the charge says. Only a charge linked to nothing is asked here,
// and the answer is what it carries:
// - Our id in its metadata: POST /api/checkout puts the order's id in the PaymentIntent's metadata,
//   which Stripe copies to the charge when the PaymentIntent is confirmed. It is a claim (anyone
//   can write metadata), so the module checks it against its rows: 'ours', then wait or refuse.
// - No PaymentIntent: every payment of ours goes through Checkout and has one. Not ours.
// - An invoice (API versions before 2025-03-31 name it on the charge): a subscription's invoice
//   of ours may not have arrived yet. Cannot tell.
// - No `invoice` field at all (2025-03-31 and later removed it) and a customer, or a customer we
//   were not told of: Stripe's invoices always bill a
//   customer, and a subscription's invoice copies none of our metadata onto its PaymentIntent, so
//   this may be a subscription payment of ours whose invoice_payment.paid has not arrived. Cannot
//   tell.
// - Otherwise (`customer: null`, or `invoice: null`): no invoice's payment, and no metadata of
//   ours. Not ours.
// The ledger holds it because every module that sells credits asks the same question, and neither
// credits nor billing may depend on the other. A dispute is judged by its links alone
// (disputes.ts): it follows its payment by days, and carries only its charge's ids.
import { quoted } from '../../business-module.js';

/** The metadata keys our checkouts write: an order's id (credits) and a subscription's (billing). */
export const ORDER_ID_KEY = 'order_id';
export const SUBSCRIPTION_ID_KEY = 'subscription_id';

type Metadata = Readonly<Record<string, string>> | null | undefined;

/** What a charge carries that says whose it is. */
export interface ChargeClues {
  id: string;
  payment_intent: string | null;
  /** null: it paid no invoice; undefined: not known (API versions since 2025-03-31 have no such field). */
  invoice?: string | null | undefined;
  /** null: it has none; undefined: not known. */
  customer?: string | null | undefined;
  metadata?: Metadata;
  /** The PaymentIntent's own metadata, when the payload carries the PaymentIntent expanded. */
  payment_intent_metadata?: Metadata;
}

export type ChargeOwnership =
  /** Its metadata names one of our rows: the module checks the claim, then waits for its link or refuses. */
  | { verdict: 'ours'; orderId: string | undefined; subscriptionId: string | undefined; reason: string }
  /** It may be a payment of ours whose link has not arrived: wait, and end 'ignored' if it never does. */
  | { verdict: 'cannot_tell'; reason: string }
  /** It is not ours: 'ignored' at once, with the reason. */
  | { verdict: 'not_ours'; reason: string };

/** Whose charge `charge` is, for a charge that no row of ours is linked to. */
export function chargeOwnership(charge: ChargeClues): ChargeOwnership {
  const named = (key: string) => charge.metadata?.[key] ?? charge.payment_intent_metadata?.[key];
  const orderId = named(ORDER_ID_KEY);
  const subscriptionId = named(SUBSCRIPTION_ID_KEY);
  if (orderId !== undefined || subscriptionId !== undefined) {
    const what = orderId !== undefined ? `order ${quoted(orderId)}` : `subscription ${quoted(subscriptionId!)}`;
    return { verdict: 'ours', orderId, subscriptionId, reason: `charge ${charge.id} names ${what} in its metadata` };
  }
  if (charge.payment_intent === null) return { verdict: 'not_ours', reason: `charge ${charge.id} has no PaymentIntent: not a payment of ours` };
  const paid = `charge ${charge.id} of payment intent ${charge.payment_intent}`;
  if (typeof charge.invoice === 'string')
    return { verdict: 'cannot_tell', reason: `${paid} paid invoice ${charge.invoice}, which may be a subscription's of ours` };
  if (charge.invoice === undefined && charge.customer !== null) {
    const of = charge.customer === undefined ? '' : ` of customer ${charge.customer}`;
    return {
      verdict: 'cannot_tell',
      reason: `${paid}${of} may pay an invoice of a subscription of ours (the charge does not name its invoice since API version 2025-03-31)`,
    };
  }
  const why = charge.invoice === null ? 'paid no invoice' : 'has no customer, so paid no invoice';
  return { verdict: 'not_ours', reason: `${paid} names no order or subscription of ours in its metadata and ${why}: not started by this service` };
}
