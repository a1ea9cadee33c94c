// What the dashboard shows of the credits business beside an event: the order the event names in
// its metadata, granted, or that the PaymentIntent it names paid (a refund's charge, a dispute);
// and the events that search by order id finds.
import type { Kysely } from 'kysely';
import { payloadHolds, type BusinessRecord, type Database, type StripeEventRow } from '../../business-module.js';
import { withCreditTables } from './tables.js';

export async function orderOfEvent(db: Kysely<Database>, event: Pick<StripeEventRow, 'event_id' | 'payload'>): Promise<BusinessRecord[]> {
  const named = metadataOrderId(event.payload);
  const paymentIntent = objectPaymentIntent(event.payload);
  const order = await withCreditTables(db)
    .selectFrom('orders')
    .select(['order_id', 'status', 'account_id', 'credits', 'amount', 'currency'])
    .where((eb) => eb.or([
      eb('order_id', 'in', eb.selectFrom('credit_grants').select('order_id').where('event_id', '=', event.event_id)),
      ...(named === undefined ? [] : [eb('order_id', '=', named)]),
      // A refund's charge or a dispute names the order's payment only.
      ...(paymentIntent === undefined ? [] : [eb('payment_intent_id', '=', paymentIntent)]),
    ]))
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
    .where((eb) => eb.or([
      payloadHolds([['data', 'object', 'metadata', 'order_id']], orderId),
      eb('event_id', 'in', eb.selectFrom('credit_grants').select('event_id').where('order_id', '=', orderId)),
    ]))
    .limit(50)
    .execute();
  return rows.map((row) => row.event_id);
}
