// Test data with defaults: only what a test is about needs to be spelled out.
import { createOrder } from '../../src/fulfilment/orders.js';
import type { OrderRow } from '../../src/db/schema.js';
import { checkoutSession, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import type { TestDatabase } from './database.js';

let accounts = 0;
export const newAccountId = () => `acct_test_${process.pid}_${++accounts}`;

/** A pending order for the seeded 'starter' package (CHF 49.00, 40 credits). */
export async function givenOrder(database: TestDatabase, overrides: { accountId?: string } = {}): Promise<OrderRow> {
  const order = await createOrder(database.db, { packageId: 'starter', accountId: overrides.accountId ?? newAccountId(), email: null });
  if (!order) throw new Error('the starter package is missing from the test database');
  return order;
}

/** checkout.session.completed, paid, for the order, at the order's price. */
export function paidEvent(
  order: OrderRow,
  overrides: { type?: string; sessionId?: string; amount?: number; currency?: string; paymentStatus?: 'paid' | 'unpaid'; event?: Partial<SampleEvent> } = {},
): SampleEvent {
  const session = checkoutSession({
    orderId: order.order_id,
    amount: overrides.amount ?? order.amount,
    currency: overrides.currency ?? order.currency,
    ...(overrides.sessionId !== undefined && { sessionId: overrides.sessionId }),
    ...(overrides.paymentStatus !== undefined && { paymentStatus: overrides.paymentStatus }),
  });
  return sampleEvent(overrides.type ?? 'checkout.session.completed', session, overrides.event);
}
