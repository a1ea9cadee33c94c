// The account ledger: each account's balance of credits (account_credits), which every module
// that sells credits grants into and takes back from, and which the selling application reads
// (GET /api/accounts/:id/quota) and uses (POST /api/accounts/:id/runs: each run is recorded in
// account_runs, listed and reversible once, runs.ts). It handles no event: the modules that sell
// (credits, billing) record what they granted for what, and move the balance in the same
// transaction through the functions below, and tell the app of it (notifyAccounts: the
// account's balance and sequence in every outcome notification). It also keeps the one record of
// each dispute of a purchase (disputes.ts), which either selling module writes, and which account
// each Stripe customer belongs to (customer-links.ts), linked by the module that fulfils a
// Checkout Session this service opened.
import { defineModule } from '../../business-module.js';
import { ledgerOfAccount } from './account-records.js';
import { ledgerApiRoutes } from './routes.js';
import type { ShortfallSettler } from './revocations.js';
import type { RunRecorder } from './runs.js';
import type { LedgerTables } from './tables.js';

/**
 * The ledger, with the recorders of runs that draw no credits (a usage-billed plan's), asked in
 * order before the credits, and the selling modules' settlers of what their refunds and disputes
 * are still owed, asked in order when a run is reversed: given here by src/modules/index.ts, so
 * that the ledger depends on no module that records runs or sells, and those depend on the ledger
 * only through this file.
 */
export const defineLedger = (others: { runRecorders: readonly RunRecorder[]; shortfallSettlers: readonly ShortfallSettler[] }) =>
  defineModule({
    name: 'ledger',
    // account_credits was created by the core's sql/0001, before modules had migrations; its changes are here.
    migrations: new URL('../../../sql/ledger/', import.meta.url),
    tables: ['account_credits', 'disputes', 'account_runs', 'stripe_customers'] satisfies Array<keyof LedgerTables>,
    apiRoutes: (context) => ledgerApiRoutes(context, others),
    accountRecords: ledgerOfAccount,
  });

// What another way of recording a run implements.
export type { RecordedRun, RunRecorder } from './runs.js';

// What the modules that sell credits use.
export { addGrants, getQuota, grantsAdded, takeBackCredits, type Quota } from './account-credits.js';
export { accountId } from './account-id.js';
export { pageQuery } from './page-query.js';
export { DISPUTE_EVENT_TYPES, disputeHandler, disputePolicySettings, type DisputedPurchase, type DisputePolicy } from './disputes.js';
export { moveRevocation, shareOut, type CreditsMoved, type PaidClaim, type Revocation, type ShortfallSettler } from './revocations.js';
export { paymentWaitKey } from './payment-waits.js';
export { chargeOwnership, ORDER_ID_KEY, SUBSCRIPTION_ID_KEY, type ChargeClues, type ChargeOwnership } from './charge-ownership.js';
export { notifyAccounts, type AccountNotification } from './account-notifications.js';
// Which account a Stripe customer belongs to: linked by the modules that fulfil a Checkout Session this service opened.
export {
  accountOfCustomer,
  customersOfAccount,
  customerWaitKey,
  linkCustomer,
  linkCustomers,
  linksOfAccount,
  lockCustomersOfAccount,
  type CustomerLink,
} from './customer-links.js';
export { refundPolicySettings, revocationTarget, type RefundPolicy } from './refund-policy.js';
