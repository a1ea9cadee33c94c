// Recording Checkout payments against their orders: check the price, grant each order's credits
// once, mark the orders paid and add the grants to the accounts' balances (the ledger's grantsAdded).
// One statement for all the payments of a job's batch, because each round trip to Postgres costs
// more than the work in it (docs/benchmarks.md, drain). The one writer of credit_grants.
import { sql, type Transaction } from 'kysely';
import { grantsAdded } from '../ledger/index.js';
import type { CreditsDatabase } from './tables.js';

export interface OrderPayment {
  /** What the session's metadata.order_id names, if anything: checked against the order that stored the session. */
  orderId: string | null;
  /** The event that paid: recorded on the grant, so a second Event object learns which one did. */
  eventId: string;
  amount: number | null;
  /** Lower case, as orders store it. */
  currency: string | null;
  checkoutSessionId: string;
  paymentIntentId: string | null;
}

/** What a payment granted, for the order.paid notification. */
export interface OrderGrant {
  orderId: string;
  accountId: string;
  packageId: string;
  credits: number;
  amount: number;
  currency: string;
}

export type PaymentResult =
  /** No order stored the session, and its metadata names none. */
  | { outcome: 'no_order' }
  /** No order stored the session, and its metadata names an order we do not have. */
  | { outcome: 'unknown_order' }
  /** The order that stored the session is not the one its metadata names. */
  | { outcome: 'order_mismatch'; orderId: string }
  /** The order its metadata names stored another session. */
  | { outcome: 'session_mismatch'; storedSessionId: string }
  /** The order its metadata names has stored no session yet (POST /api/checkout died before it could). */
  | { outcome: 'session_not_stored' }
  | { outcome: 'price_mismatch'; orderId: string; amount: number; currency: string }
  | { outcome: 'granted'; grant: OrderGrant }
  | { outcome: 'already_granted'; byEventId: string };

/**
 * Grants once per order (docs/design.md, invariant 5): the unique credit_grants.order_id decides,
 * not a read-then-write. A session pays only the order that stored its id when POST /api/checkout
 * opened it; metadata.order_id is anyone's to write in the Stripe account, so it only has to agree
 * (or be absent), and never finds an order on its own. The orders' row locks (the one that stored
 * the session, and the one its metadata names) are taken first, in order id order (two batches
 * sharing orders cannot deadlock on them), so two events racing for one order run one after the
 * other, and a concurrent refund sees the order after this grant, not before. Two payments of one
 * order in the same batch: the first in the list grants, the second learns it was granted. Each
 * step feeds the next only with what happened: no grant (wrong price, wrong order, or granted
 * before) means no balance change and no status change. One result per payment, in order.
 */
export async function recordOrderPayments(tx: Transaction<CreditsDatabase>, payments: readonly OrderPayment[]): Promise<PaymentResult[]> {
  if (payments.length === 0) return [];
  const incoming = JSON.stringify(payments.map((p, i) => ({ i, ...p })));
  const { rows } = await sql<{
    linked_order: string | null;
    amount: number | null;
    currency: string | null;
    named_order: string | null;
    named_session: string | null;
    granted_to: string | null;
    account_id: string | null;
    package_id: string | null;
    credits: number | null;
  }>`
    with incoming as (
      -- Named, not *: a statement with a star is never prepared (src/db/prepared-statements.ts),
      -- and this one runs in every fulfilment transaction.
      select i, "orderId", "eventId", amount, currency, "checkoutSessionId", "paymentIntentId"
      from jsonb_to_recordset(${incoming}::jsonb) as p(
        i int, "orderId" text, "eventId" text, amount int, currency text, "checkoutSessionId" text, "paymentIntentId" text)
    ), locked_orders as materialized (
      select order_id, account_id, package_id, credits, amount, currency, checkout_session_id from orders
      -- A union of two index lookups: an OR of the two would scan every order, in every batch.
      where order_id in (
        select o.order_id from orders o join incoming p on o.checkout_session_id = p."checkoutSessionId"
        union
        select "orderId" from incoming)
      order by order_id
      for update
    ), grant_rows as (
      insert into credit_grants (order_id, account_id, credits, event_id)
      select distinct on (o.order_id) o.order_id, o.account_id, o.credits, p."eventId"
      from incoming p join locked_orders o on o.checkout_session_id = p."checkoutSessionId"
      -- The order that stored the session pays; metadata.order_id, if any, must name that order.
      where coalesce(p."orderId", o.order_id) = o.order_id and o.amount = p.amount and o.currency = p.currency
      order by o.order_id, p.i
      on conflict (order_id) do nothing
      returning order_id, account_id, credits, event_id
    ), paid as (
      update orders set
        status = 'paid',
        paid_at = now(),
        -- Kept because refunds (charge.refunded, refunds.create) name the PaymentIntent.
        payment_intent_id = p."paymentIntentId"
      from grant_rows g join incoming p on p."eventId" = g.event_id
      where orders.order_id = g.order_id and orders.status = 'pending'
    ), balances as (
      ${grantsAdded(sql`select account_id, credits from grant_rows`)}
    )
    select linked.order_id as linked_order, linked.amount, linked.currency,
           linked.account_id, linked.package_id, linked.credits,
           named.order_id as named_order, named.checkout_session_id as named_session, g.event_id as granted_to
    from incoming p
    left join locked_orders linked on linked.checkout_session_id = p."checkoutSessionId"
    left join locked_orders named on named.order_id = p."orderId"
    left join grant_rows g on g.order_id = linked.order_id
    order by p.i`.execute(tx);

  const results = payments.map((payment, i): PaymentResult | undefined => {
    const row = rows[i]!;
    if (row.linked_order === null || row.amount === null || row.currency === null) {
      if (payment.orderId === null) return { outcome: 'no_order' };
      if (row.named_order === null) return { outcome: 'unknown_order' };
      return row.named_session === null ? { outcome: 'session_not_stored' } : { outcome: 'session_mismatch', storedSessionId: row.named_session };
    }
    const orderId = row.linked_order;
    if (payment.orderId !== null && payment.orderId !== orderId) return { outcome: 'order_mismatch', orderId };
    if (row.amount !== payment.amount || row.currency !== payment.currency) {
      return { outcome: 'price_mismatch', orderId, amount: row.amount, currency: row.currency };
    }
    if (row.granted_to === payment.eventId) {
      return {
        outcome: 'granted',
        grant: { orderId, accountId: row.account_id!, packageId: row.package_id!, credits: row.credits!, amount: row.amount, currency: row.currency },
      };
    }
    if (row.granted_to !== null) return { outcome: 'already_granted', byEventId: row.granted_to };
    return undefined;
  });
  // Granted before this statement (or by the event we waited for on an order lock: this
  // statement's snapshot predates that commit, so the grant is read by a new statement).
  const before = rows.filter((_, i) => results[i] === undefined).map((row) => row.linked_order!);
  if (before.length === 0) return results as PaymentResult[];
  const grants = new Map(
    (await tx.selectFrom('credit_grants').select(['order_id', 'event_id']).where('order_id', 'in', before).execute()).map((g) => [g.order_id, g.event_id]),
  );
  return results.map((result, i) => result ?? { outcome: 'already_granted', byEventId: grants.get(rows[i]!.linked_order!)! });
}
