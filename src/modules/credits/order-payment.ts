// Recording Checkout payments against their orders: check the price, grant each order's credits
// once, mark the orders paid and add the grants to the accounts' balances (account-quota.ts).
// One statement for all the payments of a job's batch, because each round trip to Postgres costs
// more than the work in it (docs/benchmarks.md, drain). The one writer of credit_grants.
import { sql, type Transaction } from 'kysely';
import { grantsAdded } from './account-quota.js';
import type { CreditsDatabase } from './tables.js';

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
 * not a read-then-write. The orders' row locks are taken first, in order id order (two batches
 * sharing orders cannot deadlock on them), so two events racing for one order run one after the
 * other, and a concurrent refund sees the order after this grant, not before. Two payments of
 * one order in the same batch: the first in the list grants, the second learns it was granted.
 * Each step feeds the next only with what happened: no grant (wrong price, or granted before)
 * means no balance change and no status change. One result per payment, in order.
 */
export async function recordOrderPayments(tx: Transaction<CreditsDatabase>, payments: readonly OrderPayment[]): Promise<PaymentResult[]> {
  if (payments.length === 0) return [];
  const incoming = JSON.stringify(payments.map((p, i) => ({ i, ...p })));
  const { rows } = await sql<{ amount: number | null; currency: string | null; granted_to: string | null }>`
    with incoming as (
      -- Named, not *: a statement with a star is never prepared (src/db/prepared-statements.ts),
      -- and this one runs in every fulfilment transaction.
      select i, "orderId", "eventId", amount, currency, "checkoutSessionId", "paymentIntentId"
      from jsonb_to_recordset(${incoming}::jsonb) as p(
        i int, "orderId" text, "eventId" text, amount int, currency text, "checkoutSessionId" text, "paymentIntentId" text)
    ), locked_orders as materialized (
      select order_id, account_id, credits, amount, currency from orders
      where order_id in (select "orderId" from incoming)
      order by order_id
      for update
    ), grant_rows as (
      insert into credit_grants (order_id, account_id, credits, event_id)
      select distinct on (o.order_id) o.order_id, o.account_id, o.credits, p."eventId"
      from incoming p join locked_orders o on o.order_id = p."orderId"
      where o.amount = p.amount and o.currency = p.currency
      order by o.order_id, p.i
      on conflict (order_id) do nothing
      returning order_id, account_id, credits, event_id
    ), paid as (
      update orders set
        status = 'paid',
        paid_at = now(),
        checkout_session_id = coalesce(orders.checkout_session_id, p."checkoutSessionId"),
        -- Kept because refunds (charge.refunded, refunds.create) name the PaymentIntent.
        payment_intent_id = p."paymentIntentId"
      from grant_rows g join incoming p on p."eventId" = g.event_id
      where orders.order_id = g.order_id and orders.status = 'pending'
    ), balances as (
      ${grantsAdded(sql`select account_id, credits from grant_rows`)}
    )
    select o.amount, o.currency, g.event_id as granted_to
    from incoming p
    left join locked_orders o on o.order_id = p."orderId"
    left join grant_rows g on g.order_id = p."orderId"
    order by p.i`.execute(tx);

  const results = payments.map((payment, i): PaymentResult | undefined => {
    const order = rows[i]!;
    if (order.amount === null || order.currency === null) return { outcome: 'unknown_order' };
    if (order.amount !== payment.amount || order.currency !== payment.currency) {
      return { outcome: 'price_mismatch', amount: order.amount, currency: order.currency };
    }
    if (order.granted_to === payment.eventId) return { outcome: 'granted' };
    if (order.granted_to !== null) return { outcome: 'already_granted', byEventId: order.granted_to };
    return undefined;
  });
  // Granted before this statement (or by the event we waited for on an order lock: this
  // statement's snapshot predates that commit, so the grant is read by a new statement).
  const before = payments.filter((_, i) => results[i] === undefined).map((p) => p.orderId);
  if (before.length === 0) return results as PaymentResult[];
  const grants = new Map(
    (await tx.selectFrom('credit_grants').select(['order_id', 'event_id']).where('order_id', 'in', before).execute()).map((g) => [g.order_id, g.event_id]),
  );
  return payments.map((payment, i) => results[i] ?? { outcome: 'already_granted', byEventId: grants.get(payment.orderId)! });
}
