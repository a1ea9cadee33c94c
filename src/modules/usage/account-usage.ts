// An account's usage records, newest first, with where each one's report to Stripe stands: what
// GET /api/accounts/:id/usage answers (runs that drew credits are the ledger's GET …/runs), and
// what the accounts view shows of the usage module.
import { sql, type Kysely } from 'kysely';
import type { AccountRecords, Database } from '../../business-module.js';
import { withUsageTables } from './tables.js';

export interface AccountUsage {
  usage_id: string;
  quantity: number;
  event_name: string;
  subscription_id: string;
  used_at: Date;
  /** Its report: pending, sent or failed (docs/operations.md, "Usage reports"). */
  report: 'pending' | 'sent' | 'failed';
}

/** A page of the account's usage; undefined when `after` names no usage of the account. */
export async function listUsage(
  db: Kysely<Database>,
  accountId: string,
  page: { limit: number; after: string | undefined },
): Promise<{ usage: AccountUsage[]; nextCursor: string | null } | undefined> {
  const usage = withUsageTables(db);
  let query = usage
    .selectFrom('usage_records as u')
    .leftJoin('usage_reports as r', 'r.usage_id', 'u.usage_id')
    // Prune deletes only sent reports (usage-retention.ts): a record without one was reported.
    .select([
      'u.usage_id',
      'u.quantity',
      'u.event_name',
      'u.subscription_id',
      'u.used_at',
      sql<AccountUsage['report']>`coalesce(r.status, 'sent')`.as('report'),
    ])
    .where('u.account_id', '=', accountId);
  if (page.after !== undefined) {
    const cursor = await usage
      .selectFrom('usage_records')
      .select('usage_id')
      .where('usage_id', '=', page.after)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    if (!cursor) return undefined;
    // Compared in SQL: used_at has microseconds, which a JavaScript Date would drop.
    query = query.where(sql<boolean>`(u.used_at, u.usage_id) < (select used_at, usage_id from usage_records where usage_id = ${page.after})`);
  }
  const rows = await query
    .orderBy('u.used_at', 'desc')
    .orderBy('u.usage_id', 'desc')
    .limit(page.limit + 1)
    .execute();
  const items = rows.slice(0, page.limit);
  return { usage: items, nextCursor: rows.length > page.limit ? items[items.length - 1]!.usage_id : null };
}

/** The accounts view's part (src/accounts/account-view.ts): the newest usage, each a record of kind 'usage'. */
export async function usageRecords(db: Kysely<Database>, accountId: string, limit: number): Promise<AccountRecords> {
  const { usage } = (await listUsage(db, accountId, { limit, after: undefined }))!;
  return {
    records: usage.map(({ usage_id, quantity, event_name, subscription_id, used_at, report }) => ({
      kind: 'usage',
      id: usage_id,
      fields: { quantity, event_name, subscription_id, used_at: used_at.toISOString(), report },
    })),
  };
}
