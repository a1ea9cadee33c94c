// Our copy of each Stripe customer's active entitlements, kept true to Stripe whatever order its
// summaries arrive in, and the account's set (the union over its linked customers) told to the
// app when it changes. Each set is stamped with when it was true, as subscription state is
// (src/modules/billing/subscription-state.ts says why, and why the host's clock must be kept in
// time): a summary event's `created`, or the second a full read from Stripe began. An older set
// is dropped, a newer one replaces it. Two different sets of one second cannot be ordered: a tie,
// resolved by reading Stripe (full-read.ts). A read wins over a set of its own second that was
// applied before it began (Stripe had that summary before the read), and ties with one applied
// while it was on its way.
import { createHash } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Database, Notifications } from '../../business-module.js';
import { lockCustomersOfAccount, notifyAccounts } from '../ledger/index.js';
import type { Entitlement } from './stripe-schemas.js';
import { withEntitlementTables } from './tables.js';

export type SetChange = 'applied' | 'older' | 'unchanged' | 'tie';

export interface CustomerSet {
  customerId: string;
  accountId: string;
  entitlements: readonly Entitlement[];
  /** When the set was true: a summary event's `created`, or when a full read began. */
  at: Date;
  /** An event (which one) or a full read (null). */
  eventId: string | null;
  notifications: Notifications;
}

/**
 * Applies a customer's set, and tells the account's app of a change of the account's set once.
 * The account's customers are locked first, so one account's set changes one transaction at a time.
 */
export async function applyCustomerSet(transaction: Transaction<Database>, set: CustomerSet): Promise<SetChange> {
  const tx = withEntitlementTables(transaction);
  const customers = await lockCustomersOfAccount(transaction, set.accountId);
  const when = Math.floor(set.at.getTime() / 1000) * 1000;
  const summary = await tx.selectFrom('entitlement_summaries').select(['as_of', 'applied_at']).where('customer_id', '=', set.customerId).executeTakeFirst();
  const held = summary?.as_of.getTime();
  if (held !== undefined && when < held) return 'older';
  const rows = await tx.selectFrom('customer_entitlements').selectAll().where('customer_id', 'in', customers).execute();
  const own = rows.filter((row) => row.customer_id === set.customerId);
  const same =
    own.length === set.entitlements.length &&
    set.entitlements.every((e) => own.some((row) => row.lookup_key === e.lookupKey && row.feature_id === e.featureId));
  const fetchAfter = set.eventId === null && summary !== undefined && summary.applied_at < set.at;
  if (held !== undefined && when === held && !fetchAfter) return same ? 'unchanged' : 'tie';
  await tx
    .insertInto('entitlement_summaries')
    .values({ customer_id: set.customerId, as_of: new Date(when), event_id: set.eventId })
    .onConflict((oc) => oc.column('customer_id').doUpdateSet({ as_of: new Date(when), event_id: set.eventId, applied_at: sql`now()` }))
    .execute();
  const names = new Map(own.map((row) => [row.lookup_key, row.name]));
  const named = set.entitlements.map((e) => ({ ...e, name: e.name ?? names.get(e.lookupKey) ?? null }));
  if (same && named.every((e) => e.name === names.get(e.lookupKey))) return 'unchanged';
  await tx.deleteFrom('customer_entitlements').where('customer_id', '=', set.customerId).execute();
  if (named.length > 0) {
    await tx
      .insertInto('customer_entitlements')
      .values(named.map((e) => ({ customer_id: set.customerId, lookup_key: e.lookupKey, feature_id: e.featureId, name: e.name })))
      .execute();
  }
  if (same) return 'unchanged';
  const before = new Set(rows.map((row) => row.lookup_key));
  const after = new Set([...rows.filter((row) => row.customer_id !== set.customerId).map((row) => row.lookup_key), ...named.map((e) => e.lookupKey)]);
  await notifyChange(transaction, set, when, before, after);
  return 'applied';
}

/** account.entitlements_updated, when the account's set differs: once per change (its key). */
async function notifyChange(tx: Transaction<Database>, set: CustomerSet, when: number, before: Set<string>, after: Set<string>): Promise<void> {
  const added = [...after].filter((key) => !before.has(key)).sort();
  const removed = [...before].filter((key) => !after.has(key)).sort();
  if (added.length === 0 && removed.length === 0) return;
  const entitlements = [...after].sort();
  const change = createHash('sha256')
    .update(JSON.stringify([[...before].sort(), entitlements]))
    .digest('base64url')
    .slice(0, 22);
  await notifyAccounts(tx, set.notifications, [
    {
      type: 'account.entitlements_updated',
      // One change: from the set held to this one, true from this second.
      key: `account.entitlements_updated:${set.accountId}:${when / 1000}:${change}`,
      accountId: set.accountId,
      creditsDelta: 0,
      eventId: set.eventId,
      data: { added, removed, entitlements, as_of: new Date(when).toISOString() },
    },
  ]);
}
