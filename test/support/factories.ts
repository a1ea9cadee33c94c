// Test data with defaults: only what a test is about needs to be spelled out.
import assert from 'node:assert/strict';
import type { StripeEventRow } from '../../src/db/schema.js';
import type { OrderRow } from '../../src/modules/credits/tables.js';
import { findEvent, type IncomingEvent } from '../../src/events/event-store.js';
import { getQuota, type Quota } from '../../src/modules/ledger/account-credits.js';
import { noWaiters } from './no-waiters.js';
import { attachCheckoutSession, createOrder, findOrder } from '../../src/modules/credits/orders.js';
import { checkoutSession, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import { toIncomingEvent } from '../../src/stripe/webhook-event.js';
import type { TestDatabase } from './database.js';
import { waitFor } from './wait-for.js';

let accounts = 0;
export const newAccountId = () => `acct_test_${process.pid}_${++accounts}`;

/**
 * A pending order for the seeded 'starter' package (CHF 49.00, 40 credits) unless another is given,
 * with the id of its Checkout Session stored (`cs_test_<order_id>`) as POST /api/checkout stores it
 * once Stripe answers.
 */
export async function givenOrder(database: TestDatabase, overrides: { accountId?: string; orderId?: string; packageId?: string } = {}): Promise<OrderRow> {
  const order = await createOrder(database.db, {
    packageId: overrides.packageId ?? 'starter',
    accountId: overrides.accountId ?? newAccountId(),
    email: null,
    ...(overrides.orderId !== undefined && { orderId: overrides.orderId }),
  });
  if (!order) throw new Error(`the package ${overrides.packageId ?? 'starter'} is missing from the test database, or archived`);
  const checkoutSessionId = `cs_test_${order.order_id}`;
  await attachCheckoutSession(database.db, order.order_id, checkoutSessionId, noWaiters);
  return { ...order, checkout_session_id: checkoutSessionId };
}

/** checkout.session.completed, paid, for the order, at the order's price, of the Checkout Session it stored. */
export function paidEvent(
  order: OrderRow,
  overrides: { type?: string; sessionId?: string; amount?: number; currency?: string; paymentStatus?: 'paid' | 'unpaid'; event?: Partial<SampleEvent> } = {},
): SampleEvent {
  const sessionId = overrides.sessionId ?? order.checkout_session_id;
  const session = checkoutSession({
    orderId: order.order_id,
    amount: overrides.amount ?? order.amount,
    currency: overrides.currency ?? order.currency,
    ...(sessionId !== null && { sessionId }),
    ...(overrides.paymentStatus !== undefined && { paymentStatus: overrides.paymentStatus }),
  });
  return sampleEvent(overrides.type ?? 'checkout.session.completed', session, overrides.event);
}

/** The event as the webhook route would store it, for tests that skip HTTP (no worker running). */
export function incomingEvent(event: SampleEvent): IncomingEvent {
  return toIncomingEvent(event, Buffer.from(JSON.stringify(event)));
}

// Reading outcomes: what a test asserts on, straight from the tables.

export async function eventRow(database: TestDatabase, eventId: string): Promise<StripeEventRow> {
  const row = await findEvent(database.db, eventId);
  if (!row) throw new Error(`event ${eventId} is not stored`);
  return row;
}

/** Polls until the worker has finished the event (any status but 'processing') and returns its row. */
export async function finishedEvent(database: TestDatabase, eventId: string, options: { timeoutMs?: number } = {}): Promise<StripeEventRow> {
  let last: StripeEventRow | undefined;
  try {
    return await waitFor(
      `event ${eventId} to finish`,
      async () => {
        last = await findEvent(database.db, eventId);
        return last?.status !== 'processing' && last;
      },
      options,
    );
  } catch (error) {
    // Where it stood says why: waiting (for what), retrying (after which failure), or never run.
    const wait = await database.db.selectFrom('stripe_events').select(['waits_for', 'wait_until']).where('event_id', '=', eventId).executeTakeFirst();
    const state = last
      ? `${last.type}, attempts ${last.attempts}, job ${last.job_key ?? 'none'}, waits for ${wait?.waits_for?.join(' ') ?? 'nothing'}, last error: ${last.last_error ?? 'none'}`
      : 'not stored';
    throw new Error(`${(error as Error).message} (${state})`, { cause: error });
  }
}

/** Ended 'failed' on its first attempt (refused, not retried), its reason naming every id in `ids`. */
export async function refusedAtOnce(database: TestDatabase, eventId: string, ids: readonly string[]): Promise<StripeEventRow> {
  const row = await finishedEvent(database, eventId);
  assert.deepEqual([row.status, row.attempts], ['failed', 1], `${row.status} after ${row.attempts} attempt(s): ${row.last_error}`);
  for (const id of ids) assert.ok(row.last_error?.includes(id), `${id} in: ${row.last_error}`);
  return row;
}

/** Polls until the worker has tried the event at least once and left it 'processing' for graphile-worker's retry (a transient failure); returns its row. */
export async function retryingEvent(database: TestDatabase, eventId: string, options: { timeoutMs?: number } = {}): Promise<StripeEventRow> {
  return waitFor(
    `event ${eventId} to wait for a retry`,
    async () => {
      const row = await findEvent(database.db, eventId);
      if (row && row.status !== 'processing') throw new Error(`event ${eventId} ended ${row.status}: ${row.last_error ?? ''}`);
      return row !== undefined && row.attempts >= 1 && row;
    },
    options,
  );
}

/**
 * Polls until the worker has run the event and parked it ('processing', waiting for what it names:
 * src/events/event-waits.ts); returns its row and what it waits for.
 */
export async function waitingEvent(
  database: TestDatabase,
  eventId: string,
  options: { timeoutMs?: number } = {},
): Promise<StripeEventRow & { waits_for: string[] }> {
  return waitFor(
    `event ${eventId} to wait`,
    async () => {
      // The wait first, then the row: read the other way round, a park committing between the two
      // reads pairs its wait with the row before it (no reason in last_error yet).
      const wait = await database.db.selectFrom('stripe_events').select('waits_for').where('event_id', '=', eventId).executeTakeFirst();
      const row = await findEvent(database.db, eventId);
      if (row && row.status !== 'processing') throw new Error(`event ${eventId} ended ${row.status}: ${row.last_error ?? ''}`);
      return row !== undefined && wait?.waits_for != null && { ...row, waits_for: wait.waits_for };
    },
    options,
  );
}

/** A parked event's wait past its deadline, as if WAIT_HOURS had gone by: its next run ends it. */
export async function endWait(database: TestDatabase, eventId: string): Promise<void> {
  await database.db
    .updateTable('stripe_events')
    .set({ wait_until: new Date(Date.now() - 1_000) })
    .where('event_id', '=', eventId)
    .execute();
}

export async function grantsOf(database: TestDatabase, orderId: string): Promise<Array<{ event_id: string; credits: number }>> {
  return database.db.selectFrom('credit_grants').select(['event_id', 'credits']).where('order_id', '=', orderId).execute();
}

export async function quotaOf(database: TestDatabase, accountId: string): Promise<Quota> {
  return getQuota(database.db, accountId);
}

export async function orderRow(database: TestDatabase, orderId: string): Promise<OrderRow> {
  const order = await findOrder(database.db, orderId);
  if (!order) throw new Error(`order ${orderId} is not stored`);
  return order;
}

/**
 * A paid order, paid as production pays it: its checkout.session.completed delivered through the
 * service's webhook and fulfilled. Returned with its PaymentIntent, which refunds name.
 */
export async function paidOrder(
  database: TestDatabase,
  service: { deliver(event: unknown): Promise<{ status: number }> },
): Promise<OrderRow & { payment_intent_id: string }> {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  assert.equal((await service.deliver(event)).status, 200);
  assert.equal((await finishedEvent(database, event.id)).status, 'processed');
  const paid = await orderRow(database, order.order_id);
  return { ...paid, payment_intent_id: paid.payment_intent_id! };
}
