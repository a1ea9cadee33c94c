// The credit ledger: grants keyed by order (one per order, by primary key) and a running
// balance per account. Quota = granted - used.
import { sql, type Kysely } from 'kysely';
import type { Database, OrderRow } from '../db/schema.js';

export type GrantResult = { granted: true } | { granted: false; byEventId: string };

/**
 * Grants an order's credits once (DESIGN invariant 5). The unique key on credit_grants.order_id
 * decides, not a read-then-write: two events racing for one order both try the insert and
 * exactly one inserts; the other learns which event granted.
 */
export async function grantOrderCredits(db: Kysely<Database>, order: OrderRow, eventId: string): Promise<GrantResult> {
  const inserted = await db
    .insertInto('credit_grants')
    .values({ order_id: order.order_id, account_id: order.account_id, credits: order.credits, event_id: eventId })
    .onConflict((oc) => oc.column('order_id').doNothing())
    .returning('order_id')
    .executeTakeFirst();
  if (!inserted) {
    const existing = await db.selectFrom('credit_grants').select('event_id').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    return { granted: false, byEventId: existing.event_id };
  }
  await db
    .insertInto('account_credits')
    .values({ account_id: order.account_id, granted: order.credits })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ granted: sql`account_credits.granted + excluded.granted` }))
    .execute();
  return { granted: true };
}

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
