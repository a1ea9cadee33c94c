// An account as ops read it (GET /admin/api/accounts/:account_id, the dashboard's accounts view):
// its balance, what granted its credits and what was taken back of them, what it used them for,
// its other business records (subscriptions, disputes, entitlements, usage) and the
// notifications the app was sent about it. The core keeps no account of its own: an account is
// the selling application's user id, and each business module tells what it holds under it
// (accountRecords, part of the module contract, src/module-contract.ts); the notifications are
// the core's. Reads only.
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { BusinessRecord } from '../events/read-model.js';
import { listNotifications, type NotificationView } from '../notifications/notification-store.js';

/** Each list of the view holds at most this many, newest first: an account may have years of runs. */
export const ACCOUNT_LIST_LIMIT = 50;

export interface AccountBalance {
  granted: number;
  used: number;
  remaining: number;
}

/** Credits granted to the account, with the purchase behind them and what was taken back of them since. */
export interface AccountGrant {
  /** What paid for them, in the module's words: 'order' (a package), 'period' (a subscription's paid invoice). */
  readonly for: string;
  /** The order's id, the invoice's id. */
  readonly id: string;
  readonly credits: number;
  /** Of those, taken back so far (refunds, disputes whose funds were withdrawn, less what a won dispute gave back). */
  readonly taken_back: number;
  /** What was paid, in the currency's smallest unit (Stripe's amounts). */
  readonly amount: number;
  readonly currency: string;
  readonly granted_at: Date;
  /** The Stripe event that granted them. */
  readonly event_id: string;
  /** The rest the module shows: the package, the subscription and billing reason of a period. */
  readonly fields: BusinessRecord['fields'];
}

/** Credits the account used (POST /api/accounts/:id/runs), given back once if reversed. */
export interface AccountRun {
  readonly run_id: string;
  readonly quantity: number;
  readonly created_at: Date;
  readonly reversed_at: Date | null;
}

/** What one module holds about an account; each part only from the module that keeps it. */
export interface AccountRecords {
  /** The running balance (the ledger's). */
  readonly balance?: AccountBalance;
  readonly grants?: readonly AccountGrant[];
  readonly runs?: readonly AccountRun[];
  /** Its subscriptions, disputes, entitlements, usage, ... */
  readonly records?: readonly BusinessRecord[];
}

/** What a business module tells the accounts view (part of the module contract, src/module-contract.ts). */
export interface AccountLookups {
  /** What the module holds under the account, each list at most `limit` long, newest first. */
  accountRecords?(db: Kysely<Database>, accountId: string, limit: number): Promise<AccountRecords>;
}

export interface AccountView {
  account_id: string;
  /** Zero when nothing was granted yet: an account exists as soon as the app names it. */
  balance: AccountBalance;
  grants: AccountGrant[];
  runs: AccountRun[];
  records: BusinessRecord[];
  /** Each with its per-account `sequence`, as the app received it. */
  notifications: NotificationView[];
}

/**
 * The account as every module and the outbox know it. An account no one knows is an empty view,
 * not an error: the app names accounts, and one that bought nothing yet has nothing to show (as
 * GET /api/accounts/:id/quota answers zeros).
 */
export async function accountView(db: Kysely<Database>, accountId: string, modules: readonly AccountLookups[]): Promise<AccountView> {
  const [found, notifications] = await Promise.all([
    Promise.all(modules.map((m) => m.accountRecords?.(db, accountId, ACCOUNT_LIST_LIMIT) ?? Promise.resolve({} as AccountRecords))),
    listNotifications(db, { accountId, limit: ACCOUNT_LIST_LIMIT }),
  ]);
  const newestFirst = <T>(items: readonly T[], at: (item: T) => Date) =>
    [...items].sort((a, b) => at(b).getTime() - at(a).getTime()).slice(0, ACCOUNT_LIST_LIMIT);
  return {
    account_id: accountId,
    balance: found.find((r) => r.balance)?.balance ?? { granted: 0, used: 0, remaining: 0 },
    grants: newestFirst(
      found.flatMap((r) => r.grants ?? []),
      (g) => g.granted_at,
    ),
    runs: newestFirst(
      found.flatMap((r) => r.runs ?? []),
      (r) => r.created_at,
    ),
    records: found.flatMap((r) => r.records ?? []),
    notifications,
  };
}
