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

/**
 * How a reversed run pays what a selling module's refunds and disputes could not take back: a
 * purchase refunded or disputed while its credits were in use keeps a revocation short of its
 * target (credits used stay used), and a reversal makes credits unused again. Had the run been
 * reversed before the refund, the refund would have taken them; so the reversal takes them now,
 * and the balance ends the same in either order. Given the reversal's transaction, the account
 * and the credits the reversal gives back (`budget`), the settler locks the account's purchases
 * whose revocation is short (before the balance, the order their refunds and disputes lock in),
 * records up to `budget` more credits as revoked, oldest purchase first, and answers what it paid
 * to which purchase (its key, as its disputes name it); the ledger then takes that many from the
 * balance. Given by src/modules/index.ts, as run recorders are.
 */
export type ShortfallSettler = (tx: Transaction<Database>, accountId: string, budget: number) => Promise<PaidClaim[]>;

/** Credits a reversal paid to a purchase's revocation: `purchase` is the module's key of it, e.g. `order:<order_id>`. */
export interface PaidClaim {
  purchase: string;
  paid: number;
}

/** `budget` shared out over shortfalls in their order, each getting at most what it is owed; only those that get some. */
export function shareOut<T extends { owed: number }>(shortfalls: readonly T[], budget: number): Array<T & { paid: number }> {
  const shares: Array<T & { paid: number }> = [];
  let left = budget;
  for (const shortfall of shortfalls) {
    const paid = Math.min(shortfall.owed, left);
    if (paid <= 0) break;
    shares.push({ ...shortfall, paid });
    left -= paid;
  }
  return shares;
}
