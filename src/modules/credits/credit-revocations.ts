// Taking an order's credits back, once per target: how many its refunds call for is the ledger's
// REFUND_POLICY arithmetic (revocationTarget), and a dispute whose funds are withdrawn claims them
// all (the ledger's settleDispute); what was taken back for which order is credit_revocations,
// and the balance is the ledger's (moveRevocation). One target per order serves both, so a refund
// after a lost dispute (or the reverse) never takes the same credits twice.
import { sql, type Transaction } from 'kysely';
import { moveRevocation, type Revocation } from '../ledger/index.js';
import type { CreditsDatabase, OrderRow } from './tables.js';

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
