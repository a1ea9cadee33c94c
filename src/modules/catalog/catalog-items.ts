// The catalog's operations, the same for packages (credits module) and plans (billing module):
// the admin API, npm run catalog and the dashboard all go through them. A CatalogKind reads and
// writes one module's table (catalog-table.ts); the steps around it (the Price check, what a
// refusal says) are here once.
import type { Kysely } from 'kysely';
import type { Database, StripeCallFailure, StripeCalls } from '../../business-module.js';
import { checkStripePrice, type PriceTerms } from './stripe-price.js';

/** A package or plan as the admin API and npm run catalog show it. */
export interface CatalogItem {
  id: string;
  name: string;
  amount: number;
  currency: string;
  credits: number;
  active: boolean;
  stripe_price_id: string | null;
  /** The Stripe Features (lookup keys) it grants. */
  features: string[];
  /** Plans only. */
  interval?: string;
  interval_count?: number;
  /** Usage-billed plans only: the meter their runs are reported to (src/modules/usage/). */
  meter_event_name?: string;
}

/** What every new item has, whatever its kind adds. */
export interface NewCatalogItem {
  id: string;
  name: string;
  amount: number;
  currency: string;
  credits: number;
  stripe_price_id?: string | undefined;
  features?: string[] | undefined;
}

/** One kind of catalog item and the writes of its table, which its module owns. */
export interface CatalogKind<I extends NewCatalogItem = NewCatalogItem> {
  /** 'package' or 'plan': in messages, and the admin API's path (/admin/api/<noun>s). */
  readonly noun: string;
  /** What a Price must be to sell this item. */
  priceTerms(input: I): PriceTerms;
  /** Every item, archived ones too, the active first. */
  list(db: Kysely<Database>): Promise<CatalogItem[]>;
  find(db: Kysely<Database>, id: string): Promise<CatalogItem | undefined>;
  findByPrice(db: Kysely<Database>, stripePriceId: string): Promise<CatalogItem | undefined>;
  /** The items sold through a Price of this Product. */
  findByProduct(db: Kysely<Database>, stripeProductId: string): Promise<CatalogItem[]>;
  /** undefined when the id or the Price is taken (by a concurrent insert: callers look first). */
  insert(db: Kysely<Database>, input: I, stripeProductId: string | null): Promise<CatalogItem | undefined>;
  /** Name and active only: the rest never changes (the table's trigger refuses it). undefined when unknown. */
  change(db: Kysely<Database>, id: string, change: CatalogChange): Promise<CatalogItem | undefined>;
}

export interface CatalogChange {
  name?: string | undefined;
  active?: boolean | undefined;
}

export interface CatalogDeps {
  db: Kysely<Database>;
  stripeCalls: StripeCalls;
}

export type AddOutcome =
  { outcome: 'created'; item: CatalogItem } | { outcome: 'taken'; reason: string } | { outcome: 'price_refused'; reason: string } | StripeCallFailure;

/** Creates the item, after checking its Price at Stripe when it names one. */
export async function addCatalogItem<I extends NewCatalogItem>(kind: CatalogKind<I>, deps: CatalogDeps, input: I): Promise<AddOutcome> {
  const taken = await whyTaken(kind, deps.db, input);
  if (taken) return { outcome: 'taken', reason: taken };
  let productId: string | null = null;
  if (input.stripe_price_id !== undefined) {
    const check = await checkStripePrice(deps.stripeCalls, input.stripe_price_id, kind.priceTerms(input));
    if (check.outcome === 'refused') return { outcome: 'price_refused', reason: check.reason };
    if (check.outcome !== 'matches') return check;
    productId = check.productId;
  }
  const item = await kind.insert(deps.db, input, productId);
  if (item) return { outcome: 'created', item };
  return { outcome: 'taken', reason: (await whyTaken(kind, deps.db, input)) ?? `${kind.noun} ${input.id} was created at the same time` };
}

async function whyTaken(kind: CatalogKind<never>, db: Kysely<Database>, input: NewCatalogItem): Promise<string | undefined> {
  if (await kind.find(db, input.id)) return `${kind.noun} ${input.id} exists; a ${kind.noun}'s price never changes: choose another id`;
  const sold = input.stripe_price_id === undefined ? undefined : await kind.findByPrice(db, input.stripe_price_id);
  if (sold) return `${kind.noun} ${sold.id} already sells Price ${input.stripe_price_id}`;
  return undefined;
}

/** Archives the item: gone from the lists the app reads, refused to new checkouts; what was sold keeps working. */
export const archiveCatalogItem = (kind: CatalogKind<never>, db: Kysely<Database>, id: string) => kind.change(db, id, { active: false });
