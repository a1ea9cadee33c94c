// Realistic Entitlements events built from Stripe's published example object of an active
// entitlement summary (src/stripe/fixtures/), overriding only what matters: for the tests and
// `npm run send-event -- --entitlements`, never the service.
import type { Kysely } from 'kysely';
import { exampleObject, randomStripeId, sampleEvent, type Database, type SampleEvent } from '../../business-module.js';
import { planFeaturesOfCheckoutSession } from '../billing/index.js';
import { featuresOfCheckoutSession } from '../credits/index.js';
import { linksOfAccount } from '../ledger/index.js';

/** One active entitlement: a Feature by lookup_key, with the ids Stripe would give it. */
export interface SampleEntitlement {
  /** ent_… */
  id: string;
  /** feat_… */
  feature: string;
  lookup_key: string;
  name: string;
}

/** An active entitlement of the Feature `lookupKey`: ids derived from it, so that one Feature keeps its ids. */
export function sampleEntitlement(lookupKey: string): SampleEntitlement {
  return { id: `ent_test_${lookupKey}`, feature: `feat_test_${lookupKey}`, lookup_key: lookupKey, name: `Feature ${lookupKey}` };
}

/**
 * The customer's active entitlement summary, shaped like Stripe's: its `entitlements` list is a
 * page of at most `pageSize` (Stripe's default list page is 10), `has_more` when there are more.
 */
export function summaryObject(customerId: string, entitlements: readonly SampleEntitlement[], { pageSize = 10 } = {}): Record<string, unknown> {
  const example = exampleObject('entitlements.active_entitlement_summary');
  return {
    ...example,
    customer: customerId,
    entitlements: {
      ...(example.entitlements as Record<string, unknown>),
      data: entitlements.slice(0, pageSize).map((e) => ({
        id: e.id,
        object: 'entitlements.active_entitlement',
        feature: e.feature,
        livemode: false,
        lookup_key: e.lookup_key,
      })),
      has_more: entitlements.length > pageSize,
      url: `/v1/customer/${customerId}/entitlements`,
    },
  };
}

/** entitlements.active_entitlement_summary.updated for the customer, `created` at `at` (seconds). */
export function summaryUpdatedEvent(customerId: string, lookupKeys: readonly string[], at: number): SampleEvent {
  return sampleEvent('entitlements.active_entitlement_summary.updated', summaryObject(customerId, lookupKeys.map(sampleEntitlement)), { created: at });
}

export const randomCustomerId = () => randomStripeId('cus');

/**
 * What Stripe would send for each Stripe customer linked to the account: a summary of the Features
 * of the package or plan bought through the Checkout Session that linked it (npm run send-event
 * --entitlements). None when the account has no linked customer.
 */
export async function accountSummaries(db: Kysely<Database>, accountId: string, at: number): Promise<SampleEvent[]> {
  const links = await linksOfAccount(db, accountId);
  return Promise.all(
    links.map(async (link) => {
      const features = (await featuresOfCheckoutSession(db, link.checkoutSessionId)) ?? (await planFeaturesOfCheckoutSession(db, link.checkoutSessionId)) ?? [];
      return summaryUpdatedEvent(link.customerId, features, at);
    }),
  );
}
