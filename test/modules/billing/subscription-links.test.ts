// Which of our subscriptions a Stripe subscription's event belongs to is decided by the link its own
// Checkout Session made, never by metadata, which anyone who can write metadata in the Stripe
// account can set (src/modules/billing/subscription-links.ts). With A linked to sub_A and B to
// sub_B: an event of sub_B whose metadata names A is refused for good, and A keeps its credits and
// status; metadata naming an unlinked C neither binds C to a Stripe subscription nor waits when
// sub_B is linked; and only C's own Checkout Session, the one whose id C stored, links C.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { invoiceObject, PERIOD_SECONDS, subscriptionObject, type SampleSubscription } from '../../../src/modules/billing/sample-events.js';
import { waker } from '../../../src/events/event-waits.js';
import { linkCheckoutSession } from '../../../src/modules/billing/subscription-links.js';
import { createSubscription, storeCheckoutSession } from '../../../src/modules/billing/subscriptions.js';
import { randomStripeId, sampleEvent, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { eventRow, finishedEvent, newAccountId, quotaOf, waitingEvent, refusedAtOnce as refusedAtOnceIn } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';
import { checkoutCompleted, subscribedThroughApi } from '../../support/subscriptions.js';
import { waitFor } from '../../support/wait-for.js';

// graphile-worker retries after e^1 ≈ 2.7 s, found by a poll every 2 s (src/worker/runners.ts).
const RETRY_TIMEOUT_MS = 20_000;

const file = serviceForFile();

const subscriptionRow = (subscriptionId: string) =>
  file.database.db.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();

/** Stripe's subscription `of`, with `names`' id written into its metadata by someone else. */
const naming = (of: SampleSubscription, names: SampleSubscription): SampleSubscription => ({ ...of, subscriptionId: names.subscriptionId });

const paidInvoice = (subscription: SampleSubscription) =>
  sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_cycle', status: 'paid' }));

async function delivered(event: SampleEvent) {
  assert.equal((await file.service.deliver(event)).status, 200);
  return event;
}

const refusedAtOnce = (event: SampleEvent, ids: readonly string[]) => refusedAtOnceIn(file.database, event.id, ids);

describe('an event whose metadata contradicts the link is refused', () => {
  test("invoice.paid of sub_B naming A: failed, both ids in the reason, A's and B's credits unchanged", async () => {
    const [a, b] = [await subscribedThroughApi(file, { linked: true }), await subscribedThroughApi(file, { linked: true })];
    const event = await delivered(paidInvoice(naming(b, a)));
    const row = await refusedAtOnce(event, [b.stripeSubscriptionId, b.subscriptionId, a.subscriptionId]);
    assert.match(row.last_error!, /: refused$/);
    assert.equal((await quotaOf(file.database, a.accountId)).granted, 0);
    assert.equal((await quotaOf(file.database, b.accountId)).granted, 0);
  });

  test('customer.subscription.updated of sub_B naming A, canceled: failed, A stays active', async () => {
    const [a, b] = [await subscribedThroughApi(file, { linked: true }), await subscribedThroughApi(file, { linked: true })];
    const periodEnd = Math.floor(Date.now() / 1000) + PERIOD_SECONDS;
    const active = await delivered(
      sampleEvent('customer.subscription.updated', subscriptionObject(a, { status: 'active', periodEnd }), { created: Math.floor(Date.now() / 1000) - 10 }),
    );
    assert.equal((await finishedEvent(file.database, active.id)).status, 'processed');

    const canceled = await delivered(sampleEvent('customer.subscription.updated', subscriptionObject(naming(b, a), { status: 'canceled', periodEnd })));
    await refusedAtOnce(canceled, [b.stripeSubscriptionId, b.subscriptionId, a.subscriptionId]);
    const [rowA, rowB] = [await subscriptionRow(a.subscriptionId), await subscriptionRow(b.subscriptionId)];
    assert.deepEqual([rowA.status, rowA.stripe_subscription_id], ['active', a.stripeSubscriptionId]);
    assert.deepEqual([rowB.status, rowB.stripe_subscription_id], ['pending', b.stripeSubscriptionId]);
  });

  test('an invoice of sub_B naming an unlinked C: failed at once, not retried, and C stays unlinked', async () => {
    const b = await subscribedThroughApi(file, { linked: true });
    const c = await subscribedThroughApi(file);
    const event = await delivered(paidInvoice(naming(b, c)));
    await refusedAtOnce(event, [b.stripeSubscriptionId, b.subscriptionId, c.subscriptionId]);
    assert.equal((await subscriptionRow(c.subscriptionId)).stripe_subscription_id, null);
    assert.equal((await quotaOf(file.database, c.accountId)).granted, 0);
  });
});

describe('metadata alone never links', () => {
  test("an invoice of a Stripe subscription linked nowhere, naming an unlinked C, waits with C unlinked; C's own checkout links it and the invoice grants", async () => {
    const c = await subscribedThroughApi(file);
    const elsewhere = { ...c, stripeSubscriptionId: randomStripeId('sub') };
    const invoice = await delivered(paidInvoice(elsewhere));
    const waiting = await waitingEvent(file.database, invoice.id);
    assert.match(waiting.last_error ?? '', new RegExp(`${c.subscriptionId} was never linked to it: waiting for the checkout.session.completed`));
    assert.equal((await subscriptionRow(c.subscriptionId)).stripe_subscription_id, null);
    assert.equal((await quotaOf(file.database, c.accountId)).granted, 0);
    // Not bound: a cancel of C cannot reach the Stripe subscription the metadata named.
    assert.equal((await file.service.call('POST', `/api/subscriptions/${c.subscriptionId}/cancel`)).status, 409);

    // The Checkout Session C stored completes, and started that very Stripe subscription.
    const checkout = await delivered(checkoutCompleted(elsewhere));
    assert.equal((await finishedEvent(file.database, checkout.id)).status, 'processed');
    assert.equal((await subscriptionRow(c.subscriptionId)).stripe_subscription_id, elsewhere.stripeSubscriptionId);
    assert.equal((await finishedEvent(file.database, invoice.id, { timeoutMs: RETRY_TIMEOUT_MS })).status, 'processed');
    assert.equal((await quotaOf(file.database, c.accountId)).granted, 100);
  });

  test('a subscription Checkout Session naming C whose id is not the one C stored: failed with both session ids, C unlinked', async () => {
    const c = await subscribedThroughApi(file);
    const other = { ...c, checkoutSessionId: randomStripeId('cs') };
    const event = await delivered(checkoutCompleted(other));
    await refusedAtOnce(event, [other.checkoutSessionId, c.checkoutSessionId, c.subscriptionId]);
    assert.equal((await subscriptionRow(c.subscriptionId)).stripe_subscription_id, null);
  });

  test('the Checkout Session C stored, its metadata naming A: failed, neither linked', async () => {
    const a = await subscribedThroughApi(file);
    const c = await subscribedThroughApi(file);
    const event = await delivered(checkoutCompleted({ ...c, subscriptionId: a.subscriptionId }));
    await refusedAtOnce(event, [c.checkoutSessionId, c.subscriptionId, a.subscriptionId]);
    for (const { subscriptionId } of [a, c]) assert.equal((await subscriptionRow(subscriptionId)).stripe_subscription_id, null);
  });

  test('a checkout of a subscription that has stored no Checkout Session id waits for it, and links once the retried POST stores it', async () => {
    // As POST /api/subscriptions leaves it when it dies between Stripe's answer and storing the id.
    const row = (await createSubscription(file.database.db, { planId: 'pro_monthly', accountId: newAccountId(), email: null }))!;
    const subscription = {
      subscriptionId: row.subscription_id,
      checkoutSessionId: randomStripeId('cs'),
      stripeSubscriptionId: randomStripeId('sub'),
      amount: 1900,
      currency: 'chf',
    };
    const event = await delivered(checkoutCompleted(subscription));
    const waiting = await waitingEvent(file.database, event.id);
    assert.match(waiting.last_error ?? '', /waiting for the Checkout Session id/);
    assert.equal((await subscriptionRow(row.subscription_id)).stripe_subscription_id, null);

    await storeCheckoutSession(file.database.db, row.subscription_id, subscription.checkoutSessionId, waker({ maxAttempts: 10 }));
    assert.equal((await finishedEvent(file.database, event.id, { timeoutMs: RETRY_TIMEOUT_MS })).status, 'processed');
    assert.equal((await subscriptionRow(row.subscription_id)).stripe_subscription_id, subscription.stripeSubscriptionId);
  });
});

test("a link that loses the race for a Stripe subscription to another of ours ends failed at once: the unique key's refusal is permanent", async () => {
  const [p, q] = [await subscribedThroughApi(file), await subscribedThroughApi(file)];
  const contested = randomStripeId('sub');
  // P's checkout links `contested` in a transaction that stays open: Q's link, which does not see
  // it yet, waits on the unique index until it commits, then is refused by it.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holder: number | undefined;
  const linking = file.database.db.transaction().execute(async (tx) => {
    await linkCheckoutSession(tx, waker({ maxAttempts: 10 }), { id: p.checkoutSessionId, subscription: contested, customer: null, named: p.subscriptionId });
    holder = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx)).rows[0]!.pid;
    await released;
  });
  try {
    await waitFor("P's link to be written", () => Promise.resolve(holder));
    const event = await delivered(checkoutCompleted({ ...q, stripeSubscriptionId: contested }));
    await waitFor("Q's link to wait for P's", async () => {
      const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where ${holder!}::int = any(pg_blocking_pids(pid))`.execute(
        file.database.db,
      );
      return rows.length > 0;
    });
    release();
    await linking;
    const row = await refusedAtOnce(event, [contested, q.subscriptionId, q.checkoutSessionId]);
    assert.match(row.last_error!, /linked to another subscription of ours meanwhile: refused/);
  } finally {
    release();
    await linking.catch(() => {});
  }
  assert.equal((await subscriptionRow(p.subscriptionId)).stripe_subscription_id, contested);
  assert.equal((await subscriptionRow(q.subscriptionId)).stripe_subscription_id, null);
});

test("an invoice that arrives while its subscription's checkout is linking it is granted at once: neither waits for the other's lock in a circle", async () => {
  const p = await subscribedThroughApi(file);
  // P's checkout writes the link and then stops before its wake, holding P's row: the invoice's
  // fulfilment, which finds no link yet, must take the row's lock before the link's wait key, or
  // the wake (which takes the key) and the invoice (holding the key, wanting the row) deadlock.
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holder: number | undefined;
  const wake = waker({ maxAttempts: 10 });
  const linking = file.database.db.transaction().execute(async (tx) => {
    await linkCheckoutSession(
      tx,
      async (wakeTx, keys) => {
        holder = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(wakeTx)).rows[0]!.pid;
        await released;
        return wake(wakeTx, keys);
      },
      { id: p.checkoutSessionId, subscription: p.stripeSubscriptionId, customer: null, named: p.subscriptionId },
    );
  });
  try {
    await waitFor("P's link to be written", () => Promise.resolve(holder));
    const invoice = await delivered(paidInvoice(p));
    await waitFor("the invoice's fulfilment to wait for P's row", async () => {
      const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where ${holder!}::int = any(pg_blocking_pids(pid))`.execute(
        file.database.db,
      );
      return rows.length > 0;
    });
    release();
    await linking;
    // Granted by the try that waited for the row, not by a retry after one side was chosen a
    // deadlock victim (Postgres breaks the circle after deadlock_timeout by failing one of them;
    // the failed try is recorded on the row until the retry succeeds).
    let failure: string | undefined;
    const row = await waitFor('the invoice to be granted', async () => {
      const seen = await eventRow(file.database, invoice.id);
      if (seen.status === 'processing' && seen.last_error !== null) failure ??= seen.last_error;
      return seen.status !== 'processing' && seen;
    });
    assert.equal(failure, undefined);
    assert.deepEqual([row.status, row.attempts, row.last_error], ['processed', 0, null]);
  } finally {
    release();
    await linking.catch(() => {});
  }
  assert.equal((await quotaOf(file.database, p.accountId)).granted, 100);
});
