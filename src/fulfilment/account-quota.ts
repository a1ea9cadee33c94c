// An account's quota: what its grants added up to (credit_grants, one per order by primary key,
// written with the running balance by order-payment.ts), what it used, what is left; and using
// one credit atomically. Quota = granted - used.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

export interface Quota {
  account_id: string;
  granted: number;
  used: number;
  remaining: number;
}

export async function getQuota(db: Kysely<Database>, accountId: string): Promise<Quota> {
  const row = await db.selectFrom('account_credits').select(['granted', 'used']).where('account_id', '=', accountId).executeTakeFirst();
  const granted = row?.granted ?? 0;
  const used = row?.used ?? 0;
  return { account_id: accountId, granted, used, remaining: granted - used };
}

/**
 * Consumes one credit, or returns undefined when none is left. One conditional UPDATE: the row
 * lock serialises concurrent consumers of an account, and the re-checked predicate means the
 * balance can never go below zero (also a CHECK constraint).
 */
export async function consumeCredit(db: Kysely<Database>, accountId: string): Promise<{ remaining: number } | undefined> {
  return db
    .updateTable('account_credits')
    .set({ used: sql`used + 1` })
    .where('account_id', '=', accountId)
    .whereRef('used', '<', 'granted')
    .returning(sql<number>`granted - used`.as('remaining'))
    .executeTakeFirst();
}
