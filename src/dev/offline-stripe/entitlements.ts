// The offline stand-in's active entitlements: what GET /v1/entitlements/active_entitlements lists
// for a customer, as a test or `npm start` set it. Stripe's list rules: `customer` required,
// `limit` 1-100 (10 by default), pages by `starting_after` (an entitlement id), `has_more`, `url`;
// `expand[]=data.feature` gives each entitlement's Feature (its id, lookup_key and name).
import { invalid, integer, missing, type Params } from './wire.js';

export const ACTIVE_ENTITLEMENTS_PATH = '/v1/entitlements/active_entitlements';

export interface OfflineEntitlement {
  /** ent_… */
  id: string;
  /** feat_… */
  feature: string;
  lookup_key: string;
  /** The Feature's name, shown when the feature is expanded. */
  name: string;
  /** Test mode unless told, as the stand-in's key is. */
  livemode?: boolean;
}

export class ActiveEntitlements {
  readonly byCustomer = new Map<string, readonly OfflineEntitlement[]>();

  /** The reply body for a list request, or undefined for another path. */
  route(method: string, path: string, params: Params): Params | undefined {
    if (method !== 'GET' || path !== ACTIVE_ENTITLEMENTS_PATH) return undefined;
    if (typeof params.customer !== 'string') throw missing('customer');
    const limit = params.limit === undefined ? 10 : integer(params.limit, 'limit');
    if (limit < 1 || limit > 100) throw invalid('limit must be between 1 and 100', 'limit');
    const expand = Array.isArray(params.expand) ? params.expand : [];
    let matching = this.byCustomer.get(params.customer) ?? [];
    if (typeof params.starting_after === 'string') {
      const at = matching.findIndex((e) => e.id === params.starting_after);
      matching = at === -1 ? [] : matching.slice(at + 1);
    }
    const data = matching.slice(0, limit).map((e) => ({
      id: e.id,
      object: 'entitlements.active_entitlement',
      feature: expand.includes('data.feature')
        ? { id: e.feature, object: 'entitlements.feature', active: true, livemode: false, lookup_key: e.lookup_key, metadata: {}, name: e.name }
        : e.feature,
      livemode: e.livemode ?? false,
      lookup_key: e.lookup_key,
    }));
    return { object: 'list', url: ACTIVE_ENTITLEMENTS_PATH, has_more: matching.length > limit, data };
  }
}
