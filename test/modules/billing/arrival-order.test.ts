// Billing's handlers driven attempt by attempt, without a worker (fulfilWith): an invoice that
// arrives before its checkout tied its Stripe subscription to ours waits and then grants once; one
// that is never tied ends 'ignored' (at once when its metadata names none of ours); an older subscription state (a paused collection among it)
// never overwrites a newer one;
// a refund takes back that period's credits once, and one that maps to no grant ends 'ignored'.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { billingModule } from '../../../src/modules/billing/index.js';
import { businessModules } from '../../../src/modules/index.js';
import { invoiceObject, invoicePaymentObject, subscriptionObject } from '../../../src/modules/billing/sample-events.js';
import { applyState, requestRefresh } from '../../../src/modules/billing/subscription-state.js';
import { withBillingTables } from '../../../src/modules/billing/tables.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../../src/stripe/sample-events.js';
import { databaseForFile } from '../../support/database.js';
import { endWait, quotaOf } from '../../support/factories.js';
import { fulfilWith, handlersOf } from '../../support/handlers.js';
import { checkoutCompleted, givenSubscription } from '../../support/subscriptions.js';
import { createOutbox } from '../../../src/notifications/outbox.js';
import { testConfig } from '../../support/service.js';

const database = databaseForFile({ maxConnections: 4 });
const billing = handlersOf(billingModule);
// charge.refunded is both modules' type: refunds run with every module, as the worker runs them.
const everyModule = businessModules.map((module) => handlersOf(module));

const subscriptionRow = (subscriptionId: string) =>
  database.db.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();

describe('an invoice before its subscription is tied to ours', () => {
  /** The invoice as an API version renders it that does not carry the subscription's metadata at all. */
  const withoutMetadataField = (invoice: Record<string, unknown>) => {
    const parent = invoice.parent as { subscription_details: Record<string, unknown> };
    const details = { ...parent.subscription_details };
    delete details.metadata;
    return { ...invoice, parent: { ...parent, subscription_details: details } };
  };

  test('waits (no attempt spent), and grants once when its checkout links the subscription', async () => {
    const subscription = await givenSubscription(database);
    const paid = sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid' }));
    const [waiting] = await fulfilWith(database, billing, [paid]);
    assert.deepEqual([waiting!.row.status, waiting!.row.attempts], ['processing', 0]);
    assert.match(waiting!.row.last_error ?? '', /was never linked to it: waiting for the checkout.session.completed/);

    const [linked] = await fulfilWith(database, billing, [checkoutCompleted(subscription)]);
    assert.equal(linked!.row.status, 'processed');
    const [granted] = await fulfilWith(database, billing, [paid]);
    assert.equal(granted!.row.status, 'processed');
    assert.equal((await quotaOf(database, subscription.accountId)).granted, 100);
  });

  test("one whose payload carries no subscription metadata at all cannot tell: it waits, and ends 'ignored' with the reason when its wait gives up", async () => {
    const stranger = { subscriptionId: 'unused', stripeSubscriptionId: randomStripeId('sub'), amount: 1900, currency: 'chf' };
    const paid = sampleEvent('invoice.paid', withoutMetadataField(invoiceObject(stranger, { billingReason: 'subscription_cycle', status: 'paid' })));
    const [first] = await fulfilWith(database, billing, [paid], { maxAttempts: 2 });
    assert.equal(first!.row.status, 'processing');
    await endWait(database, paid.id);
    const [last] = await fulfilWith(database, billing, [paid], { maxAttempts: 2 });
    assert.equal(last!.row.status, 'ignored');
    assert.match(
      last!.row.last_error ?? '',
      new RegExp(`Stripe subscription ${stranger.stripeSubscriptionId} carries no subscription metadata and is not tied to a subscription of ours`),
    );
  });

  test("one whose subscription metadata names none of ours, of a Stripe subscription linked to none, is not ours: 'ignored' at once", async () => {
    const stranger = { subscriptionId: 'unused', stripeSubscriptionId: randomStripeId('sub'), amount: 1900, currency: 'chf' };
    const paid = sampleEvent('invoice.paid', invoiceObject(stranger, { billingReason: 'subscription_cycle', status: 'paid', metadata: false }));
    const [done] = await fulfilWith(database, billing, [paid], { maxAttempts: 2 });
    assert.deepEqual([done!.row.status, done!.row.attempts], ['ignored', 0]);
    assert.match(
      done!.row.last_error ?? '',
      new RegExp(`Stripe subscription ${stranger.stripeSubscriptionId}: no subscription of ours is linked to it and its subscription metadata names none`),
    );
  });
});

describe('an invoice naming our subscription, of a Stripe subscription its checkout never linked', () => {
  test("waits, and ends 'failed' (not 'ignored'), saying so, when its wait gives up: our id in it makes it ours to look at", async () => {
    const subscription = await givenSubscription(database);
    const paid = sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid' }));
    const [first] = await fulfilWith(database, billing, [paid], { maxAttempts: 2 });
    assert.equal(first!.row.status, 'processing');
    await endWait(database, paid.id);
    const [last] = await fulfilWith(database, billing, [paid], { maxAttempts: 2 });
    assert.equal(last!.row.status, 'failed');
    assert.match(last!.row.last_error ?? '', new RegExp(`${subscription.subscriptionId} was never linked to it`));
    assert.equal((await subscriptionRow(subscription.subscriptionId)).stripe_subscription_id, null);
    assert.equal((await quotaOf(database, subscription.accountId)).granted, 0);
  });
});

describe("the subscription's state", () => {
  test('an older delivery never overwrites what a newer one set, in either arrival order', async () => {
    for (const newerFirst of [true, false]) {
      const subscription = await givenSubscription(database, { linked: true });
      const t = Math.floor(Date.now() / 1000) - 100;
      const created = sampleEvent('customer.subscription.created', subscriptionObject(subscription, { status: 'incomplete', periodEnd: t + 86_400 }), {
        created: t,
      });
      const updated = sampleEvent(
        'customer.subscription.updated',
        subscriptionObject(subscription, { status: 'active', periodEnd: t + 86_400, cancelAtPeriodEnd: true }),
        { created: t + 5 },
      );
      for (const event of newerFirst ? [updated, created] : [created, updated]) {
        const [done] = await fulfilWith(database, billing, [event]);
        assert.equal(done!.row.status, 'processed');
      }
      const row = await subscriptionRow(subscription.subscriptionId);
      assert.deepEqual([row.status, row.cancel_at_period_end, row.stripe_state_at?.getTime()], ['active', true, (t + 5) * 1000], `newer first: ${newerFirst}`);
    }
  });

  test('a paused collection is held as Stripe sent it, and in order: an older pause delivered after the resume does not bring it back', async () => {
    const subscription = await givenSubscription(database, { linked: true });
    const t = Math.floor(Date.now() / 1000) - 100;
    const periodEnd = t + 86_400;
    const resumesAt = t + 7 * 86_400;
    const pausedAt = (created: number) =>
      sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, pause: { behavior: 'void', resumesAt } }), {
        created,
      });
    const resumed = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd }), { created: t + 5 });
    const pauseOf = async () => {
      const row = await subscriptionRow(subscription.subscriptionId);
      return [row.status, row.pause_behavior, row.pause_resumes_at?.getTime() ?? null];
    };

    await fulfilWith(database, billing, [pausedAt(t)]);
    assert.deepEqual(await pauseOf(), ['active', 'void', resumesAt * 1000]);
    await fulfilWith(database, billing, [resumed]);
    assert.deepEqual(await pauseOf(), ['active', null, null]);
    // Another Event object of the pause, delivered late.
    const [late] = await fulfilWith(database, billing, [pausedAt(t)]);
    assert.equal(late!.row.status, 'processed');
    assert.deepEqual(await pauseOf(), ['active', null, null]);
  });

  test('a fetch of the same second as a different state held is newer only if that state was held before the fetch began', async () => {
    const subscription = await givenSubscription(database, { linked: true });
    await fulfilWith(database, billing, [
      sampleEvent('customer.subscription.created', subscriptionObject(subscription, { status: 'active', periodEnd: Math.floor(Date.now() / 1000) + 86_400 })),
    ]);
    const second = Math.floor(Date.now() / 1000) * 1000;
    const fetched = { status: 'active', currentPeriodEnd: null, cancelAtPeriodEnd: false, pause: null };
    /** The fetch's outcome when the held state (cancelling, of the same second) was applied `appliedMs` into that second, and the fetch began `beganMs` into it. */
    const fetchAgainst = (appliedMs: number, beganMs: number) =>
      database.db.transaction().execute(async (tx) => {
        await tx
          .updateTable('subscriptions')
          .set({ cancel_at_period_end: true, stripe_state_at: new Date(second), updated_at: new Date(second + appliedMs) })
          .where('subscription_id', '=', subscription.subscriptionId)
          .execute();
        const row = await tx
          .selectFrom('subscriptions')
          .selectAll()
          .where('subscription_id', '=', subscription.subscriptionId)
          .forUpdate()
          .executeTakeFirstOrThrow();
        const change = await applyState(withBillingTables(tx), row, fetched, new Date(second + beganMs), {
          source: 'fetch',
          eventId: null,
          notifications: createOutbox(testConfig()),
        });
        const after = await tx
          .selectFrom('subscriptions')
          .select('cancel_at_period_end')
          .where('subscription_id', '=', subscription.subscriptionId)
          .executeTakeFirstOrThrow();
        return [change, after.cancel_at_period_end];
      });
    assert.deepEqual(await fetchAgainst(200, 500), ['applied', false], 'held before the fetch began: the fetch read Stripe after it');
    assert.deepEqual(await fetchAgainst(500, 200), ['tie', true], 'arrived while the fetch was on its way: it may be newer than what the fetch read');

    // A fetch that tied is made again a second later, not at once (it would land in the same second).
    await database.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('subscriptions').selectAll().where('subscription_id', '=', subscription.subscriptionId).executeTakeFirstOrThrow();
      await requestRefresh(tx, row, subscription.stripeSubscriptionId, 1);
    });
    const { rows } = await sql<{ wait: number }>`
      select extract(epoch from run_at - now())::float8 as wait from graphile_worker.jobs
      where key = ${`billing_refresh_subscription:${subscription.subscriptionId}`}`.execute(database.db);
    assert.equal(rows.length, 1);
    assert.ok(rows[0]!.wait > 0 && rows[0]!.wait <= 1, `runs in ${rows[0]!.wait} s`);
  });

  test('two different states of one second are not guessed between: a fetch from Stripe is queued', async () => {
    const subscription = await givenSubscription(database, { linked: true });
    const t = Math.floor(Date.now() / 1000) - 100;
    const periodEnd = t + 86_400;
    const a = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd: true }), {
      created: t,
    });
    const b = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, cancelAtPeriodEnd: false }), {
      created: t,
    });
    await fulfilWith(database, billing, [a]);
    await fulfilWith(database, billing, [b]);
    // The first state stays until the fetch; the job names the subscription.
    assert.equal((await subscriptionRow(subscription.subscriptionId)).cancel_at_period_end, true);
    const { rows } = await sql<{ task_identifier: string }>`
      select task_identifier from graphile_worker.jobs where key = ${`billing_refresh_subscription:${subscription.subscriptionId}`}`.execute(database.db);
    assert.deepEqual(rows, [{ task_identifier: 'billing_refresh_subscription' }]);
  });
});

describe('refunds of a subscription payment', () => {
  async function paidPeriod() {
    const subscription = await givenSubscription(database, { linked: true });
    const invoiceId = randomStripeId('in');
    const paymentIntentId = randomStripeId('pi');
    await fulfilWith(database, billing, [
      sampleEvent('invoice.paid', invoiceObject(subscription, { id: invoiceId, billingReason: 'subscription_create', status: 'paid' })),
      sampleEvent('invoice_payment.paid', invoicePaymentObject(invoiceId, paymentIntentId, 1900, 'chf')),
    ]);
    return { ...subscription, invoiceId, paymentIntentId };
  }
  const refunded = (paymentIntentId: string, amountRefunded: number) =>
    sampleEvent('charge.refunded', {
      ...exampleObject('charge'),
      id: randomStripeId('ch'),
      amount: 1900,
      currency: 'chf',
      payment_intent: paymentIntentId,
      amount_refunded: amountRefunded,
      refunded: amountRefunded >= 1900,
    });

  test("a full refund takes back the period's credits once, however often it is told", async () => {
    const period = await paidPeriod();
    // Credits the account holds besides this period's, so a second take-back would show.
    await sql`update account_credits set granted = granted + 100 where account_id = ${period.accountId}`.execute(database.db);
    for (const event of [refunded(period.paymentIntentId, 1900), refunded(period.paymentIntentId, 1900), refunded(period.paymentIntentId, 900)]) {
      // The packages module finds no order for it and waits; the billing module's outcome wins.
      const [done] = await fulfilWith(database, everyModule, [event]);
      assert.equal(done!.row.status, 'processed');
    }
    assert.deepEqual(await quotaOf(database, period.accountId), { account_id: period.accountId, granted: 100, used: 0, remaining: 100 });
    const grant = await database.db.selectFrom('invoice_grants').selectAll().where('invoice_id', '=', period.invoiceId).executeTakeFirstOrThrow();
    assert.deepEqual([grant.refunded_amount, grant.revocation_target, grant.revoked_credits], [1900, 100, 100]);
  });

  test("a refund that maps to no order and no grant, of a charge that pays no invoice and names nothing of ours, ends 'ignored' at once with both modules' reasons", async () => {
    const event = refunded(randomStripeId('pi'), 1900);
    const [done] = await fulfilWith(database, everyModule, [event], { maxAttempts: 2 });
    // attempts counts failed attempts: none failed, none waited.
    assert.deepEqual([done!.row.status, done!.row.attempts], ['ignored', 0]);
    assert.match(
      done!.row.last_error ?? '',
      /^no paid order for payment intent .*: not started by this service; no granted invoice paid by payment intent .*: not started by this service$/,
    );
  });

  test('a charge that names its invoice (API versions before 2025-03-31) finds the grant by it, with no PaymentIntent linked', async () => {
    const subscription = await givenSubscription(database, { linked: true });
    const invoiceId = randomStripeId('in');
    const [paid] = await fulfilWith(database, billing, [
      sampleEvent('invoice.paid', invoiceObject(subscription, { id: invoiceId, billingReason: 'subscription_create', status: 'paid' })),
    ]);
    assert.equal(paid!.row.status, 'processed');
    const charge = { ...refunded(randomStripeId('pi'), 1900).data.object, invoice: invoiceId, customer: randomStripeId('cus') };
    const [done] = await fulfilWith(database, everyModule, [sampleEvent('charge.refunded', charge, { api_version: '2024-06-20' })]);
    assert.equal(done!.row.status, 'processed');
    assert.equal((await quotaOf(database, subscription.accountId)).granted, 0);
  });

  test('one that names an invoice granted nowhere cannot tell: it waits', async () => {
    const charge = { ...refunded(randomStripeId('pi'), 1900).data.object, invoice: randomStripeId('in'), customer: randomStripeId('cus') };
    const [done] = await fulfilWith(database, everyModule, [sampleEvent('charge.refunded', charge, { api_version: '2024-06-20' })]);
    assert.equal(done!.row.status, 'processing');
    assert.match(done!.row.last_error ?? '', /paid invoice in_\S+, which may be a subscription's of ours/);
  });

  test("a refund of a customer's charge linked to nothing may pay an invoice of ours: it waits, then ends 'ignored'", async () => {
    const event = sampleEvent('charge.refunded', { ...refunded(randomStripeId('pi'), 1900).data.object, customer: randomStripeId('cus') });
    const [first] = await fulfilWith(database, everyModule, [event], { maxAttempts: 2 });
    assert.equal(first!.row.status, 'processing');
    await endWait(database, event.id);
    const [last] = await fulfilWith(database, everyModule, [event], { maxAttempts: 2 });
    assert.equal(last!.row.status, 'ignored');
    assert.match(
      last!.row.last_error ?? '',
      /^gave up waiting after \d+ h: no granted invoice paid by payment intent .* \(yet\): .* may pay an invoice of a subscription of ours/,
    );
  });
});
