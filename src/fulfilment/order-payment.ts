// Recording a Checkout payment against its order: check the price, grant the order's credits once,
// add them to the account's balance, mark the order paid. One statement, because each round trip
// to Postgres costs more than the work in it (docs/benchmarks.md, drain): fulfilment used to spend
// four statements here and now spends one.
import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

export interface OrderPayment {
  orderId: string;
  /** The event that paid: recorded on the grant, so a second Event object learns which one did. */
  eventId: string;
  amount: number | null;
  /** Lower case, as orders store it. */
  currency: string | null;
  checkoutSessionId: string;
  paymentIntentId: string | null;
}

export type PaymentResult =
  | { outcome: 'unknown_order' }
  | { outcome: 'price_mismatch'; amount: number; currency: string }
  | { outcome: 'granted' }
  | { outcome: 'already_granted'; byEventId: string };

/**
 * Grants once per order (DESIGN invariant 5): the unique key on credit_grants.order_id decides,
 * not a read-then-write. The order's row lock is taken first, so two events racing for one order
 * run one after the other, and a concurrent refund sees the order after this grant, not before.
 */
export async function recordOrderPayment(tx: Transaction<Database>, payment: OrderPayment): Promise<PaymentResult> {
  // Each CTE feeds the next only when the step before it happened: no grant (wrong price, or
  // granted before) means no balance change and no status change.
  const { rows } = await sql<{ amount: number; currency: string; granted: boolean }>`
    with locked_order as materialized (
      select order_id, account_id, credits, amount, currency from orders
      where order_id = ${payment.orderId}
      for update
    ), grant_row as (
      insert into credit_grants (order_id, account_id, credits, event_id)
      select order_id, account_id, credits, ${payment.eventId} from locked_order
      where amount = ${payment.amount}::int and currency = ${payment.currency}::text
      on conflict (order_id) do nothing
      returning order_id, account_id, credits
    ), balance as (
      insert into account_credits (account_id, granted)
      select account_id, credits from grant_row
      on conflict (account_id) do update set granted = account_credits.granted + excluded.granted
    ), paid as (
      update orders set
        status = 'paid',
        paid_at = now(),
        checkout_session_id = coalesce(orders.checkout_session_id, ${payment.checkoutSessionId}),
        -- Kept because refunds (charge.refunded, refunds.create) name the PaymentIntent.
        payment_intent_id = ${payment.paymentIntentId}
      from grant_row
      where orders.order_id = grant_row.order_id and orders.status = 'pending'
    )
    select amount, currency, exists (select 1 from grant_row) as granted from locked_order`.execute(tx);

  const order = rows[0];
  if (!order) return { outcome: 'unknown_order' };
  if (order.amount !== payment.amount || order.currency !== payment.currency) {
    return { outcome: 'price_mismatch', amount: order.amount, currency: order.currency };
  }
  if (order.granted) return { outcome: 'granted' };
  // Granted before (or by the event we waited for on the order lock: this statement's snapshot
  // predates that commit, so the grant is read by a new statement).
  const grant = await tx.selectFrom('credit_grants').select('event_id').where('order_id', '=', payment.orderId).executeTakeFirstOrThrow();
  return { outcome: 'already_granted', byEventId: grant.event_id };
}
