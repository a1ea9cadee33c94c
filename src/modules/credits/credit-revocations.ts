// Taking credits back after a refund. REFUND_POLICY decides how many an order's refunds call for:
// 'full' (default) takes the order's credits back only once it is fully refunded; 'proportional'
// takes back credits in proportion to the amount refunded so far.
import { sql, type Transaction } from 'kysely';
import type { RefundPolicy } from '../../config.js';
import { takeBackCredits } from './account-quota.js';
import type { CreditsDatabase, OrderRow } from './tables.js';

export function revocationTarget(policy: RefundPolicy, order: Pick<OrderRow, 'amount' | 'credits'>, refundedAmount: number): number {
  if (policy === 'proportional') return Math.floor((order.credits * refundedAmount) / order.amount);
  return refundedAmount >= order.amount ? order.credits : 0;
}

/**
 * Moves the order's revocation to `target` credits. Converges: a target already reached (a
 * repeated or stale refund event) changes nothing, and a target never goes down.
 * The caller holds the order's row lock, which serialises refunds of one order.
 * Returns the credits taken back by this call.
 */
export async function revokeCredits(tx: Transaction<CreditsDatabase>, order: OrderRow, target: number): Promise<number> {
  const previous = await tx.selectFrom('credit_revocations').select('target_credits').where('order_id', '=', order.order_id).executeTakeFirst();
  const owed = target - (previous?.target_credits ?? 0);
  if (owed <= 0) return 0;
  const revoked = await takeBackCredits(tx, order.account_id, owed);
  await tx
    .insertInto('credit_revocations')
    .values({ order_id: order.order_id, account_id: order.account_id, target_credits: target, revoked_credits: revoked })
    .onConflict((oc) =>
      oc.column('order_id').doUpdateSet({
        target_credits: target,
        revoked_credits: sql`credit_revocations.revoked_credits + ${revoked}`,
        updated_at: sql`now()`,
      }),
    )
    .execute();
  return revoked;
}
