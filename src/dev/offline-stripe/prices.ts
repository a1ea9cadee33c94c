// The offline stand-in's catalogue: Prices and Products, which a test (or a developer) adds with
// addPrice and addProduct, read back and listed as Stripe's API does, and which a Checkout
// Session's line_items[][price] names instead of price_data.
import { invalid, integer, isRecord, StripeApiError, type Params } from './wire.js';

export class Catalogue {
  readonly prices = new Map<string, Params>();
  readonly products = new Map<string, Params>();

  route(method: string, path: string, params: Params): Params | undefined {
    if (method !== 'GET') return undefined;
    if (path === '/v1/prices') return list('/v1/prices', this.prices, params, (p) => params.product === undefined || p.product === params.product);
    if (path === '/v1/products') return list('/v1/products', this.products, params, () => true);
    const price = /^\/v1\/prices\/([^/]+)$/.exec(path)?.[1];
    if (price !== undefined) return this.price(price, 'id');
    const product = /^\/v1\/products\/([^/]+)$/.exec(path)?.[1];
    if (product !== undefined) return found(this.products, product, 'product');
    return undefined;
  }

  price(id: string, param: string): Params {
    return found(this.prices, id, 'price', param);
  }

  /** What a line item's Price charges, refused as Stripe refuses an archived one. */
  lineItem(id: string, at: string): { currency: string; unitAmount: number; recurring: boolean; metered?: boolean } {
    const price = this.price(id, `${at}[price]`);
    if (price.active !== true) throw invalid(`The price specified is inactive. This field only accepts active prices.`, `${at}[price]`);
    if (typeof price.unit_amount !== 'number') throw invalid(`The offline Stripe sells only Prices with a unit_amount.`, `${at}[price]`);
    const metered = isRecord(price.recurring) && price.recurring.usage_type === 'metered';
    return { currency: String(price.currency), unitAmount: price.unit_amount, recurring: isRecord(price.recurring), metered };
  }
}

// Oldest first here, as the maps were filled; Stripe lists newest first, which no caller relies on.
function list(url: string, objects: Map<string, Params>, params: Params, keep: (object: Params) => boolean): Params {
  const limit = params.limit === undefined ? 10 : integer(params.limit, 'limit');
  if (limit < 1 || limit > 100) throw invalid('limit must be between 1 and 100', 'limit');
  let matching = [...objects.values()].filter((o) => keep(o) && (params.active === undefined || String(o.active) === params.active));
  if (typeof params.starting_after === 'string') {
    const at = matching.findIndex((o) => o.id === params.starting_after);
    matching = at === -1 ? [] : matching.slice(at + 1);
  }
  return { object: 'list', url, has_more: matching.length > limit, data: matching.slice(0, limit) };
}

function found(objects: Map<string, Params>, id: string, type: string, param = 'id'): Params {
  const object = objects.get(id);
  if (object !== undefined) return object;
  throw new StripeApiError(404, { type: 'invalid_request_error', code: 'resource_missing', param, message: `No such ${type}: '${id}'` });
}
