// Taking an order's credits back after a refund, once per target: how many its refunds call for
// is the ledger's REFUND_POLICY arithmetic (revocationTarget); what was taken back for which order
// is credit_revocations, and the balance is the ledger's (takeBackCredits).
import { sql, type Transaction } from 'kysely';
import { takeBackCredits } from '../ledger/index.js';
import type { CreditsDatabase, OrderRow } from './tables.js';

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
