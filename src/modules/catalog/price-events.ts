// price.updated and product.updated: Stripe telling us that a Price an item is sold through, or
// its Product, changed. A Price's amount, currency and period never change at Stripe; what can is
// `active`, for the Price or its Product. An item whose Price no longer sells what it says, or
// whose Product was archived, is archived in turn, and the event says why (last_error): a
// checkout of it would otherwise fail at Stripe. Nothing is put back on sale by an event: an
// operator does that (PATCH active: true), once the Price sells again.
import { z } from 'zod';
import { objectOf, type EventHandler, type Handlers } from '../../business-module.js';
import type { CatalogItem, CatalogKind } from './catalog-items.js';
import { priceMismatches, stripePrice, type PriceTerms } from './stripe-price.js';

const stripeProduct = z.object({ id: z.string(), object: z.literal('product'), active: z.boolean() });

const termsOf = (item: CatalogItem): PriceTerms => ({
  amount: item.amount,
  currency: item.currency,
  recurring:
    item.interval === undefined
      ? null
      : { interval: item.interval, interval_count: item.interval_count ?? 1, usage_type: item.meter_event_name ? 'metered' : 'licensed' },
});

/** The handlers of one kind's module: each module archives its own table's items. */
export function catalogPriceHandlers(kind: CatalogKind<never>): Handlers {
  const priceUpdated: EventHandler = async (tx, event) => {
    const price = objectOf(stripePrice, event);
    const item = await kind.findByPrice(tx, price.id);
    if (!item) return { status: 'ignored', reason: `no ${kind.noun} is sold through Price ${price.id}` };
    const reasons = priceMismatches(price, termsOf(item));
    if (reasons.length === 0 || !item.active) return { status: 'processed' };
    await kind.change(tx, item.id, { active: false });
    return { status: 'processed', reason: `archived ${kind.noun} ${item.id}: ${reasons.join('; ')}` };
  };
  const productUpdated: EventHandler = async (tx, event) => {
    const product = objectOf(stripeProduct, event);
    const items = await kind.findByProduct(tx, product.id);
    if (items.length === 0) return { status: 'ignored', reason: `no ${kind.noun} is sold through a Price of Product ${product.id}` };
    const archiving = product.active ? [] : items.filter((item) => item.active);
    for (const item of archiving) await kind.change(tx, item.id, { active: false });
    if (archiving.length === 0) return { status: 'processed' };
    return {
      status: 'processed',
      reason: `archived ${kind.noun}(s) ${archiving.map((item) => item.id).join(', ')}: Product ${product.id} is archived (active: false)`,
    };
  };
  return { 'price.updated': priceUpdated, 'product.updated': productUpdated };
}
