// What the accounts view shows of the ledger (src/accounts/account-view.ts): the account's
// balance, the runs that used its credits, and the disputes of its purchases, whichever module
// sold them (each names its purchase, `order:<id>` or `invoice:<id>`).
import type { Kysely } from 'kysely';
import type { AccountRecords, Database } from '../../business-module.js';
import { getQuota } from './account-credits.js';
import { listRuns } from './runs.js';
import { withLedgerTables } from './tables.js';

export async function ledgerOfAccount(db: Kysely<Database>, accountId: string, limit: number): Promise<AccountRecords> {
  const [{ granted, used, remaining }, page, disputes] = await Promise.all([
    getQuota(db, accountId),
    listRuns(db, accountId, { limit, after: undefined }),
    // No index on account_id: a table of chargebacks, few rows however large the business.
    withLedgerTables(db)
      .selectFrom('disputes')
      .select(['dispute_id', 'purchase', 'status', 'funds_withdrawn', 'funds_reinstated', 'credits_taken', 'credits_returned'])
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute(),
  ]);
  return {
    balance: { granted, used, remaining },
    runs: page?.runs ?? [],
    records: disputes.map(({ dispute_id, ...fields }) => ({ kind: 'dispute', id: dispute_id, fields })),
  };
}
