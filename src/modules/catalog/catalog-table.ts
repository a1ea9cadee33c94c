// The writes of a catalog kind's table. Packages (credits module) and plans (billing module) are
// written alike but for the table's name, its id column and what a kind adds (a plan's period):
// each module owns its table, its migrations and its types, and names them here.
import { sql, type Insertable, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';
import type { CatalogChange, CatalogItem, CatalogKind, NewCatalogItem } from './catalog-items.js';
import type { PriceTerms } from './stripe-price.js';

/** The columns every catalog table has, under the same names: each module's table type extends it. */
export interface CatalogColumns {
  name: string;
  amount: number;
  currency: string;
  credits: number;
  active: Defaulted<boolean>;
  /** Checkout sells this Price instead of inline price_data. */
  stripe_price_id: Defaulted<string | null>;
  /** The Price's Product, which product.updated names. */
  stripe_product_id: Defaulted<string | null>;
  /** The Stripe Features (lookup keys) it grants (sql/credits/0036, sql/billing/0037). */
  features: Defaulted<string[]>;
}

interface CatalogTable<K extends string, R extends CatalogColumns & Record<K, string>, I extends NewCatalogItem> {
  noun: string;
  /** Its table, which its module owns. */
  table: string;
  idColumn: K;
  priceTerms: (input: I) => PriceTerms;
  /** What an insert writes beyond the columns every catalog table has (a plan's period). */
  ownColumns: (input: I) => Omit<Insertable<R>, keyof CatalogColumns | K>;
  /** What its items show beyond what every catalog item shows (a plan's period). */
  ownView?: (row: Selectable<R>) => Omit<CatalogItem, 'id' | 'name' | 'amount' | 'currency' | 'credits' | 'active' | 'stripe_price_id' | 'features'>;
}

/** The columns a change sets (name and active, under those names in every catalog table); undefined when it changes nothing. */
function changedColumns(change: CatalogChange): { name?: string; active?: boolean } | undefined {
  if (change.name === undefined && change.active === undefined) return undefined;
  return { ...(change.name !== undefined && { name: change.name }), ...(change.active !== undefined && { active: change.active }) };
}

/** The CatalogKind of a module's table. */
export function catalogKind<K extends string, R extends CatalogColumns & Record<K, string>, I extends NewCatalogItem>(
  spec: CatalogTable<K, R, I>,
): CatalogKind<I> {
  // Plain SQL: Kysely cannot type a query on a table it is given by name. The columns are the
  // spec's table's, so each row is the module's own row type.
  const table = sql.table(spec.table);
  const id = sql.ref(spec.idColumn);
  const view = (row: Selectable<R>): CatalogItem => {
    // Every catalog table has these columns (R extends CatalogColumns), which TypeScript cannot
    // see through Selectable of a type parameter.
    const item = row as unknown as Selectable<CatalogColumns> & Record<K, string>;
    return {
      id: item[spec.idColumn],
      name: item.name,
      amount: item.amount,
      currency: item.currency,
      credits: item.credits,
      active: item.active,
      stripe_price_id: item.stripe_price_id,
      features: item.features,
      ...spec.ownView?.(row),
    };
  };
  const first = async (db: Kysely<Database>, query: RawBuilder<Selectable<R>>) => {
    const row = (await query.execute(db)).rows[0];
    return row && view(row);
  };
  const all = async (db: Kysely<Database>, query: RawBuilder<Selectable<R>>) => (await query.execute(db)).rows.map(view);
  const kind: CatalogKind<I> = {
    noun: spec.noun,
    priceTerms: spec.priceTerms,
    list: (db) => all(db, sql`select * from ${table} order by active desc, amount, ${id}`),
    find: (db, itemId) => first(db, sql`select * from ${table} where ${id} = ${itemId}`),
    findByPrice: (db, priceId) => first(db, sql`select * from ${table} where stripe_price_id = ${priceId}`),
    findByProduct: (db, productId) => all(db, sql`select * from ${table} where stripe_product_id = ${productId} order by ${id}`),
    insert: (db, input, stripeProductId) => {
      const columns = Object.entries({
        [spec.idColumn]: input.id,
        name: input.name,
        amount: input.amount,
        currency: input.currency,
        credits: input.credits,
        stripe_price_id: input.stripe_price_id ?? null,
        stripe_product_id: stripeProductId,
        features: input.features ?? [],
        ...spec.ownColumns(input),
        // As Kysely's values(): a column left undefined takes its default rather than null.
      }).filter(([, value]) => value !== undefined);
      return first(
        db,
        sql`insert into ${table} (${sql.join(columns.map(([column]) => sql.ref(column)))})
        values (${sql.join(columns.map(([, value]) => value))}) on conflict do nothing returning *`,
      );
    },
    change: async (db, itemId, change) => {
      const columns = changedColumns(change);
      if (!columns) return kind.find(db, itemId);
      const set = Object.entries(columns).map(([column, value]) => sql`${sql.ref(column)} = ${value}`);
      return first(db, sql`update ${table} set ${sql.join(set)} where ${id} = ${itemId} returning *`);
    },
  };
  return kind;
}
