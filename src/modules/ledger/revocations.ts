// A purchase's revocation: the credits its refunds and disputes claim back, moved in the ledger's
// balance. One target per purchase serves refunds and disputes alike, so the two never take the
// same credits twice, and a reinstated dispute gives back only what it took.
import type { Transaction } from 'kysely';
import type { Database } from '../../business-module.js';
import { addGrants, takeBackCredits } from './account-credits.js';

/** A purchase's revocation: the credits its refunds and disputes claim back (target), and what was actually taken (never more than was unused). */
export interface Revocation {
  target: number;
  revoked: number;
}

export interface CreditsMoved {
  taken: number;
  returned: number;
}

/**
 * Moves a purchase's revocation to `target` credits: up takes back what the account has unused
 * (takeBackCredits), down (a reinstated dispute) gives back what was taken beyond the new target.
 * The caller stores the returned revocation in its own table, in the same transaction.
 */
export async function moveRevocation(tx: Transaction<Database>, accountId: string, from: Revocation, target: number): Promise<Revocation & CreditsMoved> {
  if (target > from.target) {
    const taken = await takeBackCredits(tx, accountId, target - from.target);
    return { target, revoked: from.revoked + taken, taken, returned: 0 };
  }
  if (target < from.target) {
    const revoked = Math.min(from.revoked, target);
    const returned = from.revoked - revoked;
    if (returned > 0) await addGrants(tx, [{ accountId, credits: returned }]);
    return { target, revoked, taken: 0, returned };
  }
  return { ...from, taken: 0, returned: 0 };
}
