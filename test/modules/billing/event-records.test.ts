// What ops see of billing on the dashboard (src/modules/billing/records.ts): search by our
// subscription id finds the events about it — those naming it in their metadata, those about its
// Stripe subscription, and the one that granted its invoice — and an event's detail shows the
// subscription it names and the invoice grant it made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventDetail, searchEvents } from '../../../src/events/read-model.js';
import { billingModule } from '../../../src/modules/billing/index.js';
import { invoiceObject, subscriptionObject } from '../../../src/modules/billing/sample-events.js';
import { randomStripeId, sampleEvent } from '../../../src/stripe/sample-events.js';
import { databaseForFile } from '../../support/database.js';
import { eventRow } from '../../support/factories.js';
import { fulfilWith, handlersOf } from '../../support/handlers.js';
import { checkoutCompleted, givenSubscription } from '../../support/subscriptions.js';

const database = databaseForFile({ maxConnections: 4 });

test("a subscription's events are found by our id, and an invoice's event shows its subscription and grant", async () => {
  const subscription = await givenSubscription(database);
  const periodEnd = Math.floor(Date.now() / 1000) + 86_400;
  // The checkout that links it (ours in its metadata); ours in the metadata; about the Stripe
  // subscription only (no metadata); the grant.
  const session = checkoutCompleted(subscription);
  const created = sampleEvent('customer.subscription.created', subscriptionObject(subscription, { status: 'active', periodEnd }));
  const updated = sampleEvent('customer.subscription.updated', subscriptionObject(subscription, { status: 'active', periodEnd, metadata: false }));
  const paid = sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid' }));
  // Found only by our id, in its invoice's subscription_details (an event no handler acts on, about the invoice).
  const succeeded = sampleEvent('invoice.payment_succeeded', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid' }));
  // The same, from an endpoint on an API version before 2025-03-31: the invoice names its
  // subscription at its top level.
  const invoice = invoiceObject(subscription, { billingReason: 'subscription_cycle', status: 'paid' });
  const olderSucceeded = sampleEvent(
    'invoice.payment_succeeded',
    {
      ...invoice,
      parent: undefined,
      subscription: subscription.stripeSubscriptionId,
      subscription_details: { metadata: { subscription_id: subscription.subscriptionId } },
    },
    { api_version: '2024-06-20' },
  );
  const unrelated = sampleEvent(
    'customer.subscription.created',
    subscriptionObject({ ...subscription, subscriptionId: 'subscr_other', stripeSubscriptionId: randomStripeId('sub') }, { status: 'active', periodEnd }),
  );
  await fulfilWith(database, handlersOf(billingModule), [session, created, updated, paid]);
  await fulfilWith(database, {}, [succeeded, olderSucceeded, unrelated]);

  const found = await searchEvents(database.db, subscription.subscriptionId, [billingModule]);
  assert.deepEqual(found.map((e) => e.event_id).sort(), [created.id, updated.id, paid.id, session.id, succeeded.id, olderSucceeded.id].sort());

  const detail = await eventDetail(database.db, await eventRow(database, paid.id), [billingModule]);
  assert.deepEqual(
    detail.records.map((r) => [r.kind, r.kind === 'subscription' ? r.id : r.fields.subscription_id]),
    [
      ['subscription', subscription.subscriptionId],
      ['invoice grant', subscription.subscriptionId],
    ],
  );

  const older = await eventDetail(database.db, await eventRow(database, olderSucceeded.id), [billingModule]);
  assert.deepEqual(
    older.records.map((r) => [r.kind, r.id]),
    [['subscription', subscription.subscriptionId]],
  );
});
