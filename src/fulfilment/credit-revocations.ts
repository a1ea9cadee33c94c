// Taking credits back after a refund. REFUND_POLICY decides how many an order's refunds call for:
// 'full' (default) takes the order's credits back only once it is fully refunded; 'proportional'
// takes back credits in proportion to the amount refunded so far.
import { sql, type Kysely } from 'kysely';
import type { Database, OrderRow } from '../db/schema.js';

export const REFUND_POLICIES = ['full', 'proportional'] as const;
export type RefundPolicy = (typeof REFUND_POLICIES)[number];

export function revocationTarget(policy: RefundPolicy, order: Pick<OrderRow, 'amount' | 'credits'>, refundedAmount: number): number {
  if (policy === 'proportional') return Math.floor((order.credits * refundedAmount) / order.amount);
  return refundedAmount >= order.amount ? order.credits : 0;
}

/**
 * Moves the order's revocation to `target` credits. Converges: a target already reached (a
 * repeated or stale refund event) changes nothing, and a target never goes down. Never takes
 * more than the account has left, so quota never drops below what was already used.
 * The caller holds the order's row lock, which serialises refunds of one order.
 * Returns the credits taken back by this call.
 */
export async function revokeCredits(db: Kysely<Database>, order: OrderRow, target: number): Promise<number> {
  const previous = await db.selectFrom('credit_revocations').select('target_credits').where('order_id', '=', order.order_id).executeTakeFirst();
  const owed = target - (previous?.target_credits ?? 0);
  if (owed <= 0) return 0;
  // Locked: runs being consumed on this account wait, so "what is left" stays true until commit.
  const account = await db.selectFrom('account_credits').select(['granted', 'used']).where('account_id', '=', order.account_id).forUpdate().executeTakeFirst();
  const revoked = Math.min(owed, account ? account.granted - account.used : 0);
  if (revoked > 0) {
    await db.updateTable('account_credits').set({ granted: sql`granted - ${revoked}` }).where('account_id', '=', order.account_id).execute();
  }
  await db
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
