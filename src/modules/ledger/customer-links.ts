// Which account a Stripe customer belongs to. The link is made only from what this service
// created: the customer of a Checkout Session it opened, when that session is fulfilled (credits'
// paid order, billing's linked subscription); never from metadata, which anyone who can write it
// in the Stripe account could set (docs/handlers.md, "Finding the row an event is about"). A
// customer is linked once and never moves: a session of another account naming it is refused.
// Events about a customer not linked yet (its entitlements' summary) wait on customerWaitKey, and
// the link wakes them in its transaction (src/events/event-waits.ts: the link's row is written
// first, the key taken last by the wake).
import { sql, type Kysely, type Transaction } from 'kysely';
import { PermanentError, type Database, type Wake } from '../../business-module.js';
import { withLedgerTables } from './tables.js';

/** What an event about Stripe customer `customerId` waits for when that customer is not linked yet. */
export const customerWaitKey = (customerId: string) => `customer:${customerId}`;

export interface CustomerLink {
  customerId: string;
  accountId: string;
  /** The Checkout Session this service opened, whose fulfilment names the customer. */
  checkoutSessionId: string;
}

/**
 * Links each customer to its account, in the caller's transaction, and wakes what waited for it.
 * One result per link, in order: undefined when linked (now or before, to that account), or the
 * PermanentError naming both accounts when the customer is another account's. One statement for
 * all, and a second to wake only when a link is new.
 */
export async function linkCustomers(tx: Transaction<Database>, wake: Wake, links: readonly CustomerLink[]): Promise<Array<PermanentError | undefined>> {
  if (links.length === 0) return [];
  const ledger = withLedgerTables(tx);
  // In customer order, so two batches linking the same customers meet the unique key in one order.
  const sorted = [...new Map(links.map((link) => [link.customerId, link])).values()].sort((a, b) => (a.customerId < b.customerId ? -1 : 1));
  const { rows } = await sql<{ customer_id: string; account_id: string; inserted: boolean }>`
    with incoming as (
      select * from unnest(${sorted.map((l) => l.customerId)}::text[], ${sorted.map((l) => l.accountId)}::text[], ${sorted.map((l) => l.checkoutSessionId)}::text[])
        as i(customer_id, account_id, linked_by)
    ), inserted as (
      insert into stripe_customers (customer_id, account_id, linked_by)
      select customer_id, account_id, linked_by from incoming order by customer_id
      on conflict (customer_id) do nothing
      returning customer_id, account_id
    )
    select customer_id, account_id, true as inserted from inserted
    union all
    select c.customer_id, c.account_id, false from stripe_customers c
    where c.customer_id in (select customer_id from incoming) and c.customer_id not in (select customer_id from inserted)`.execute(ledger);
  const held = new Map(rows.map((row) => [row.customer_id, row]));
  await wake(
    tx,
    rows.filter((row) => row.inserted).map((row) => customerWaitKey(row.customer_id)),
  );
  return links.map((link) => {
    const row = held.get(link.customerId);
    // A link racing this one for the same customer committed after this statement's snapshot: the
    // unique key made this insert wait for it and do nothing, but the row is not visible to the
    // select above. Transient: retried, the row is seen.
    if (!row) throw new Error(`Stripe customer ${link.customerId} was linked by another transaction meanwhile: retrying`);
    if (row.account_id === link.accountId) return undefined;
    return new PermanentError(
      `Checkout Session ${link.checkoutSessionId} of account ${link.accountId} names Stripe customer ${link.customerId}, but that customer is linked to account ${row.account_id}: refused, a customer never moves between accounts`,
    );
  });
}

/** linkCustomers for one link: throws the PermanentError of a customer that is another account's. */
export async function linkCustomer(tx: Transaction<Database>, wake: Wake, link: CustomerLink): Promise<void> {
  const [refused] = await linkCustomers(tx, wake, [link]);
  if (refused) throw refused;
}

/** The account Stripe customer `customerId` is linked to, if any. */
export async function accountOfCustomer(db: Kysely<Database>, customerId: string): Promise<string | undefined> {
  const row = await withLedgerTables(db).selectFrom('stripe_customers').select('account_id').where('customer_id', '=', customerId).executeTakeFirst();
  return row?.account_id;
}

/** Every Stripe customer linked to the account; `forUpdate`: their rows locked until the transaction ends. */
export async function customersOfAccount(db: Kysely<Database>, accountId: string, { forUpdate = false } = {}): Promise<string[]> {
  const query = withLedgerTables(db).selectFrom('stripe_customers').select('customer_id').where('account_id', '=', accountId).orderBy('customer_id');
  const rows = await (forUpdate ? query.forUpdate() : query).execute();
  return rows.map((row) => row.customer_id);
}

/**
 * Every Stripe customer linked to the account, their rows locked until the transaction ends: what
 * changes an account's entitlements holds them, so that one account's set changes one
 * transaction at a time (each compares the account's set before and after). A link being made
 * meanwhile inserts a row, which this does not wait for.
 */
export const lockCustomersOfAccount = (tx: Transaction<Database>, accountId: string): Promise<string[]> =>
  customersOfAccount(tx, accountId, { forUpdate: true });

/** The account's customers and the Checkout Session that linked each (npm run send-event --entitlements). */
export async function linksOfAccount(db: Kysely<Database>, accountId: string): Promise<CustomerLink[]> {
  const rows = await withLedgerTables(db)
    .selectFrom('stripe_customers')
    .select(['customer_id', 'linked_by'])
    .where('account_id', '=', accountId)
    .orderBy('linked_at')
    .execute();
  return rows.map((row) => ({ customerId: row.customer_id, accountId, checkoutSessionId: row.linked_by }));
}
