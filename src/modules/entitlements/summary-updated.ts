// entitlements.active_entitlement_summary.updated: the customer's set of active entitlements as
// Stripe has it, made the account's (mirror.ts). Never collapsed: each summary is a set true at its
// second, ordered by that second, so a second Event object or a replay of one converges on the
// same rows and tells nothing again. A thin notification of it (v1.entitlements.
// active_entitlement_summary.updated) names no related object (the summary has no URL of its
// own), only its snapshot event, which fulfilment fetches: it reaches this handler as the snapshot.
//
// Whose account: the customer's link, made only from a Checkout Session this service opened (the
// ledger's customer-links.ts). A customer not linked waits for its link while a session that may
// still link one is open, and ends 'ignored' otherwise.
import type { Transaction } from 'kysely';
import { lockWaitKeys, objectOf, RetryLaterError, type Database, type EventHandler, type Notifications } from '../../business-module.js';
import { subscriptionCheckoutOpenSince } from '../billing/index.js';
import { customerCheckoutOpenSince } from '../credits/index.js';
import { accountOfCustomer, customerWaitKey } from '../ledger/index.js';
import { requestFullRead } from './full-read.js';
import { applyCustomerSet } from './mirror.js';
import { activeEntitlementSummary, entitlementsOf } from './stripe-schemas.js';

/**
 * How far back a Checkout Session we opened may still link a customer: a session lives 24 hours
 * at most, and Stripe retries its checkout.session.completed for up to 3 days.
 */
const LINK_HORIZON_MS = (24 + 72) * 60 * 60 * 1000;

export const summaryUpdated =
  (notifications: Notifications): EventHandler =>
  async (tx, event) => {
    const summary = objectOf(activeEntitlementSummary, event);
    const accountId = await linkedAccount(tx, summary.customer);
    if (accountId === undefined) {
      return {
        status: 'ignored',
        reason: `customer ${summary.customer} was never linked to an account: no Checkout Session this service opened names it`,
      };
    }
    // Only a first page: the whole set is read from Stripe (full-read.ts), never applied in part.
    if (summary.entitlements.has_more) {
      await requestFullRead(tx, summary.customer);
      return { status: 'processed' };
    }
    const change = await applyCustomerSet(tx, {
      customerId: summary.customer,
      accountId,
      entitlements: entitlementsOf(summary.entitlements),
      at: event.stripe_created_at,
      eventId: event.event_id,
      notifications,
    });
    if (change === 'tie') await requestFullRead(tx, summary.customer);
    return { status: 'processed' };
  };

/**
 * The account the customer is linked to; undefined when nothing this service opened can link it
 * any more. Waits (RetryLaterError) while a Checkout Session that may still link a customer is
 * open (a subscription's, or a package's that names features): its completion links and wakes. Found unlinked, the wait key is locked before
 * the look again, as src/events/event-waits.ts wants; a link that commits meanwhile is then seen.
 * Holding the key, the handler then locks rows a waker may hold (the account's balance, to tell
 * the app): safe, because the one waker of this key is the transaction that inserts the
 * customer's link, and the link is seen only once that transaction has committed.
 */
async function linkedAccount(tx: Transaction<Database>, customerId: string): Promise<string | undefined> {
  const linked = await accountOfCustomer(tx, customerId);
  if (linked !== undefined) return linked;
  const key = customerWaitKey(customerId);
  await lockWaitKeys(tx, [key]);
  const linkedMeanwhile = await accountOfCustomer(tx, customerId);
  if (linkedMeanwhile !== undefined) return linkedMeanwhile;
  const since = new Date(Date.now() - LINK_HORIZON_MS);
  if (!(await subscriptionCheckoutOpenSince(tx, since)) && !(await customerCheckoutOpenSince(tx, since))) return undefined;
  throw new RetryLaterError(
    `customer ${customerId} is not linked to an account yet: waiting for a Checkout Session this service opened to complete and link it (one is still open)`,
    { waitsFor: [key], ignoreWhenExhausted: true },
  );
}
