// What the dashboard shows of the credits business beside an event: the order the event names in
// its metadata, granted, or that the PaymentIntent it names paid (a refund's charge, a dispute);
// the events that search by order id finds; and an account's grants, each with its order.
import type { Kysely } from 'kysely';
import { payloadHolds, type AccountRecords, type BusinessRecord, type Database, type StripeEventRow } from '../../business-module.js';
import { withCreditTables } from './tables.js';

export async function orderOfEvent(db: Kysely<Database>, event: Pick<StripeEventRow, 'event_id' | 'payload'>): Promise<BusinessRecord[]> {
  const named = metadataOrderId(event.payload);
  const paymentIntent = objectPaymentIntent(event.payload);
  const order = await withCreditTables(db)
    .selectFrom('orders')
    .select(['order_id', 'status', 'account_id', 'credits', 'amount', 'currency'])
    .where((eb) =>
      eb.or([
        eb('order_id', 'in', eb.selectFrom('credit_grants').select('order_id').where('event_id', '=', event.event_id)),
        ...(named === undefined ? [] : [eb('order_id', '=', named)]),
        // A refund's charge or a dispute names the order's payment only.
        ...(paymentIntent === undefined ? [] : [eb('payment_intent_id', '=', paymentIntent)]),
      ]),
    )
    .executeTakeFirst();
  if (!order) return [];
  const { order_id, ...fields } = order;
  return [{ kind: 'order', id: order_id, fields }];
}

/** data.object.metadata.order_id of a stored payload, when it is a string. */
function metadataOrderId(payload: unknown): string | undefined {
  const id = (payload as { data?: { object?: { metadata?: { order_id?: unknown } } } } | null)?.data?.object?.metadata?.order_id;
  return typeof id === 'string' ? id : undefined;
}

/** data.object.payment_intent of a stored payload, when it is an id. */
function objectPaymentIntent(payload: unknown): string | undefined {
  const id = (payload as { data?: { object?: { payment_intent?: unknown } } } | null)?.data?.object?.payment_intent;
  return typeof id === 'string' ? id : undefined;
}

/** Events that name the order in their metadata, or granted it. */
export async function eventsOfOrder(db: Kysely<Database>, orderId: string): Promise<string[]> {
  const rows = await withCreditTables(db)
    .selectFrom('stripe_events')
    .select('event_id')
    .where((eb) =>
      eb.or([
        payloadHolds([['data', 'object', 'metadata', 'order_id']], orderId),
        eb('event_id', 'in', eb.selectFrom('credit_grants').select('event_id').where('order_id', '=', orderId)),
      ]),
    )
    .limit(50)
    .execute();
  return rows.map((row) => row.event_id);
}

/** The account's paid orders: the credits each granted, and what refunds and disputes took back of them. */
export async function grantsOfAccount(db: Kysely<Database>, accountId: string, limit: number): Promise<AccountRecords> {
  const grants = await withCreditTables(db)
    .selectFrom('credit_grants as g')
    .innerJoin('orders as o', 'o.order_id', 'g.order_id')
    .leftJoin('credit_revocations as r', 'r.order_id', 'g.order_id')
    .select([
      'g.order_id',
      'g.credits',
      'g.granted_at',
      'g.event_id',
      'o.package_id',
      'o.status',
      'o.amount',
      'o.currency',
      'o.refunded_amount',
      'r.revoked_credits',
    ])
    // By the order's account, which orders_account_idx serves; a grant's account is its order's.
    .where('o.account_id', '=', accountId)
    .orderBy('g.granted_at', 'desc')
    .limit(limit)
    .execute();
  return {
    grants: grants.map((g) => ({
      for: 'order',
      id: g.order_id,
      credits: g.credits,
      taken_back: g.revoked_credits ?? 0,
      amount: g.amount,
      currency: g.currency,
      granted_at: g.granted_at,
      event_id: g.event_id,
      fields: { package_id: g.package_id, status: g.status, refunded_amount: g.refunded_amount },
    })),
  };
}
