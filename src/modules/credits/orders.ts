// Packages and orders: an order is one checkout attempt of a package by an account, created before
// Stripe is called, so a session Stripe knows about always names an order we know about.
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database, Wake } from '../../business-module.js';
import { withCreditTables, type CreditsDatabase, type OrderRow, type PackageRow } from './tables.js';

export async function listPackages(db: Kysely<CreditsDatabase>): Promise<PackageRow[]> {
  return db.selectFrom('packages').selectAll().where('active', '=', true).orderBy('amount').execute();
}

const newOrderId = () => `ord_${randomUUID().replaceAll('-', '')}`;

/** Creates a pending order priced from the package, or returns undefined for an unknown package. */
export async function createOrder(
  db: Kysely<CreditsDatabase>,
  input: { orderId?: string; packageId: string; accountId: string; email: string | null },
): Promise<OrderRow | undefined> {
  const pkg = await db.selectFrom('packages').selectAll().where('package_id', '=', input.packageId).where('active', '=', true).executeTakeFirst();
  if (!pkg) return undefined;
  return db
    .insertInto('orders')
    .values({
      order_id: input.orderId ?? newOrderId(),
      package_id: pkg.package_id,
      account_id: input.accountId,
      email: input.email,
      amount: pkg.amount,
      currency: pkg.currency,
      credits: pkg.credits,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findOrder(db: Kysely<CreditsDatabase>, orderId: string, options: { forUpdate?: boolean } = {}): Promise<OrderRow | undefined> {
  let query = db.selectFrom('orders').selectAll().where('order_id', '=', orderId);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** What a checkout.session.completed that names an order without its session id waits for. */
export const orderWaitKey = (orderId: string) => `order:${orderId}`;

/**
 * Stores the id of the Checkout Session opened for the order, as soon as Stripe answers: only the
 * order that stored a session is paid by it (order-payment.ts). An id once stored is kept: every
 * retry sends the same outbound key, so Stripe answers with the same session. The session's
 * completion may have arrived first and wait for it: woken in the same transaction.
 */
export async function attachCheckoutSession(db: Kysely<CreditsDatabase>, orderId: string, checkoutSessionId: string, wake: Wake): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const stored = await tx
      .updateTable('orders')
      .set({ checkout_session_id: checkoutSessionId })
      .where('order_id', '=', orderId)
      .where('checkout_session_id', 'is', null)
      .executeTakeFirst();
    if (stored.numUpdatedRows > 0n) await wake(tx, [orderWaitKey(orderId)]);
  });
}

/** The Stripe Features the package sold through this Checkout Session grants; undefined for a session no order of ours opened. */
export async function featuresOfCheckoutSession(db: Kysely<Database>, checkoutSessionId: string): Promise<string[] | undefined> {
  const row = await withCreditTables(db)
    .selectFrom('orders')
    .innerJoin('packages', 'packages.package_id', 'orders.package_id')
    .select('packages.features')
    .where('orders.checkout_session_id', '=', checkoutSessionId)
    .executeTakeFirst();
  return row?.features;
}

/**
 * Whether a Checkout Session POST /api/checkout opened since `since` for a package that names
 * features (so asks Checkout to make a customer) is not paid yet: its payment would link a Stripe
 * customer to one of our accounts, so an event about a customer we do not know may wait for it.
 */
export async function customerCheckoutOpenSince(db: Kysely<Database>, since: Date): Promise<boolean> {
  const open = await withCreditTables(db)
    .selectFrom('orders')
    .innerJoin('packages', 'packages.package_id', 'orders.package_id')
    .select('orders.order_id')
    .where('orders.status', '=', 'pending')
    .where('orders.checkout_session_id', 'is not', null)
    .where('orders.created_at', '>', since)
    .where(sql<boolean>`cardinality(packages.features) > 0`)
    .limit(1)
    .executeTakeFirst();
  return open !== undefined;
}
