// The fields of Stripe's Entitlements objects this module reads: an active entitlement summary
// (the object of entitlements.active_entitlement_summary.updated) and the active entitlements
// GET /v1/entitlements/active_entitlements lists. The summary has no id of its own: it is the
// customer's.
import { z } from 'zod';

const activeEntitlement = z.object({
  id: z.string(),
  object: z.literal('entitlements.active_entitlement'),
  // The Feature's id, or the Feature itself when expanded (a full read asks for data.feature).
  feature: z.union([z.string(), z.object({ id: z.string(), name: z.string().nullish() })]),
  lookup_key: z.string(),
});

/** A page of active entitlements: the summary's `entitlements`, or one answer of the list endpoint. */
export const activeEntitlementPage = z.object({ data: z.array(activeEntitlement), has_more: z.boolean() });

export const activeEntitlementSummary = z.object({
  object: z.literal('entitlements.active_entitlement_summary'),
  customer: z.string(),
  entitlements: activeEntitlementPage,
});

/** One active entitlement, as the mirror keeps it. */
export interface Entitlement {
  lookupKey: string;
  featureId: string;
  name: string | null;
}

export function entitlementsOf(page: z.infer<typeof activeEntitlementPage>): Entitlement[] {
  return page.data.map((e) => ({
    lookupKey: e.lookup_key,
    featureId: typeof e.feature === 'string' ? e.feature : e.feature.id,
    name: typeof e.feature === 'string' ? null : (e.feature.name ?? null),
  }));
}
