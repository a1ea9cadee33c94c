// Taking an order's credits back, once per target: how many its refunds call for is the ledger's
// REFUND_POLICY arithmetic (revocationTarget), and a dispute whose funds are withdrawn claims them
// all (the ledger's settleDispute); what was taken back for which order is credit_revocations,
// and the balance is the ledger's (moveRevocation). One target per order serves both, so a refund
// after a lost dispute (or the reverse) never takes the same credits twice.
import { sql, type Transaction } from 'kysely';
import { moveRevocation, shareOut, type Revocation, type ShortfallSettler } from '../ledger/index.js';
import { withCreditTables, type CreditsDatabase, type OrderRow } from './tables.js';

/** The order's revocation so far (none: nothing claimed back). */
export async function orderRevocation(tx: Transaction<CreditsDatabase>, orderId: string): Promise<Revocation> {
  const row = await tx.selectFrom('credit_revocations').select(['target_credits', 'revoked_credits']).where('order_id', '=', orderId).executeTakeFirst();
  return { target: row?.target_credits ?? 0, revoked: row?.revoked_credits ?? 0 };
}

export async function storeRevocation(tx: Transaction<CreditsDatabase>, order: OrderRow, revocation: Revocation): Promise<void> {
  await tx
    .insertInto('credit_revocations')
    .values({ order_id: order.order_id, account_id: order.account_id, target_credits: revocation.target, revoked_credits: revocation.revoked })
    .onConflict((oc) => oc.column('order_id').doUpdateSet({ target_credits: revocation.target, revoked_credits: revocation.revoked, updated_at: sql`now()` }))
    .execute();
}

/**
 * Raises the order's revocation to a refund's `target` credits. Converges: a target already
 * reached (a repeated or stale refund event, or a dispute that claimed everything) changes
 * nothing, and a refund's target never goes down. The caller holds the order's row lock, which
 * serialises refunds and disputes of one order. Returns the credits taken back by this call.
 */
export async function revokeCredits(tx: Transaction<CreditsDatabase>, order: OrderRow, target: number): Promise<number> {
  const from = await orderRevocation(tx, order.order_id);
  if (target <= from.target) return 0;
  const revocation = await moveRevocation(tx, order.account_id, from, target);
  await storeRevocation(tx, order, revocation);
  return revocation.taken;
}

/**
 * The credits module's ShortfallSettler (src/modules/ledger/revocations.ts): the account's orders
 * whose refunds and disputes took back fewer credits than they claim are locked first, as those
 * lock them, then their revocations read again (no refund of them can commit meanwhile) and paid,
 * the earliest paid order first.
 */
export const settleOrderShortfalls: ShortfallSettler = async (transaction, accountId, budget) => {
  const tx = withCreditTables(transaction);
  const short = tx.selectFrom('credit_revocations').select('order_id').where('account_id', '=', accountId).whereRef('revoked_credits', '<', 'target_credits');
  const locked = await tx.selectFrom('orders').select('order_id').where('order_id', 'in', short).orderBy('order_id').forUpdate().execute();
  if (locked.length === 0) return [];
  const shortfalls = await tx
    .selectFrom('credit_revocations as r')
    .innerJoin('orders as o', 'o.order_id', 'r.order_id')
    .select(['r.order_id', sql<number>`r.target_credits - r.revoked_credits`.as('owed')])
    .where(
      'r.order_id',
      'in',
      locked.map((order) => order.order_id),
    )
    .whereRef('r.revoked_credits', '<', 'r.target_credits')
    .orderBy('o.paid_at')
    .orderBy('r.order_id')
    .execute();
  const shares = shareOut(shortfalls, budget);
  if (shares.length === 0) return [];
  await sql`
    update credit_revocations as r set revoked_credits = r.revoked_credits + s.paid, updated_at = now()
    from unnest(${shares.map((s) => s.order_id)}::text[], ${shares.map((s) => s.paid)}::int[]) as s(order_id, paid)
    where r.order_id = s.order_id`.execute(tx);
  return shares.map((share) => ({ purchase: orderPurchase(share.order_id), paid: share.paid }));
};

/** An order as its disputes name it (the ledger's disputes.purchase). */
export const orderPurchase = (orderId: string) => `order:${orderId}`;
