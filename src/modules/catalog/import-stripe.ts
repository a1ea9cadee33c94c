// npm run catalog -- import-stripe: catalog items made from a team's Stripe catalogue. Every
// active Price of an active Product whose metadata.credits is a positive integer becomes a
// package (a one_time Price) or a plan (a recurring one), sold through that Price and granting
// those credits (per period, for a plan). A Price already sold by an item is left as it is, so a
// second run creates nothing: the import is idempotent, and never changes an item.
import type Stripe from 'stripe';
import type { z } from 'zod';
import { addCatalogItem, type CatalogDeps, type CatalogItem, type CatalogKind, type NewCatalogItem } from './catalog-items.js';
import { catalogId } from './fields.js';
import { productIdOf, stripePrice } from './stripe-price.js';

/** A kind of item and what adding one takes. */
export interface ImportTarget {
  kind: CatalogKind<NewCatalogItem>;
  input: z.ZodType<NewCatalogItem>;
}

export interface ImportResult {
  created: CatalogItem[];
  /** Prices an item already sells: untouched. */
  existing: Array<{ stripe_price_id: string; id: string }>;
  /** Prices or Products not imported, and why. */
  skipped: Array<{ stripe_id: string; reason: string }>;
}

/** Most a Product or a Product's Prices listed per import: a catalogue, not an order book. */
const LIST_LIMIT = 1_000;

export async function importStripeCatalog(
  deps: CatalogDeps,
  targets: { package: ImportTarget; plan: ImportTarget },
  which: { productId: string } | { all: true },
): Promise<ImportResult> {
  const result: ImportResult = { created: [], existing: [], skipped: [] };
  const products =
    'productId' in which
      ? [await deps.stripeCalls.run('product_retrieve', (stripe) => stripe.products.retrieve(which.productId))]
      : await deps.stripeCalls.run('product_list', (stripe) => stripe.products.list({ active: true, limit: 100 }).autoPagingToArray({ limit: LIST_LIMIT }));
  for (const product of products) {
    // With --all, a Product that says nothing of credits is not for sale here (a shared account).
    if (!('productId' in which) && product.metadata.credits === undefined) continue;
    const credits = Number(product.metadata.credits);
    if (!product.active) result.skipped.push({ stripe_id: product.id, reason: 'the Product is archived (active: false)' });
    else if (!Number.isSafeInteger(credits) || credits <= 0)
      result.skipped.push({ stripe_id: product.id, reason: 'its metadata.credits is not a positive integer: how many credits would it grant?' });
    else await importPrices(deps, targets, product, credits, result);
  }
  return result;
}

async function importPrices(
  deps: CatalogDeps,
  targets: { package: ImportTarget; plan: ImportTarget },
  product: Stripe.Product,
  credits: number,
  result: ImportResult,
): Promise<void> {
  const prices = await deps.stripeCalls.run('price_list', (stripe) =>
    stripe.prices.list({ product: product.id, active: true, limit: 100 }).autoPagingToArray({ limit: LIST_LIMIT }),
  );
  for (const raw of prices) {
    const price = stripePrice.safeParse(raw);
    if (!price.success || productIdOf(price.data) !== product.id) {
      result.skipped.push({ stripe_id: raw.id, reason: 'not a Price of this Product this service can read' });
      continue;
    }
    const target = price.data.recurring ? targets.plan : targets.package;
    const sold = await target.kind.findByPrice(deps.db, raw.id);
    if (sold) {
      result.existing.push({ stripe_price_id: raw.id, id: sold.id });
      continue;
    }
    // The Price's lookup_key names it when it is a valid id; else its own id, in lower case.
    const lookupKey = catalogId.safeParse(price.data.lookup_key);
    const input = target.input.safeParse({
      id: lookupKey.success ? lookupKey.data : raw.id.toLowerCase().slice(0, 64),
      name: (raw.nickname ?? product.name).slice(0, 200),
      amount: price.data.unit_amount,
      currency: price.data.currency,
      credits,
      stripe_price_id: raw.id,
      ...(price.data.recurring && { interval: price.data.recurring.interval, interval_count: price.data.recurring.interval_count }),
    });
    if (!input.success) {
      const issue = input.error.issues[0];
      result.skipped.push({ stripe_id: raw.id, reason: `${issue?.path.join('.')}: ${issue?.message}` });
      continue;
    }
    const added = await addCatalogItem(target.kind, deps, input.data);
    if (added.outcome === 'created') result.created.push(added.item);
    else result.skipped.push({ stripe_id: raw.id, reason: 'reason' in added ? added.reason : `Stripe: ${added.outcome}` });
  }
}
