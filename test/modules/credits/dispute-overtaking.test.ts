// A dispute that overtakes its own payment (Stripe's test cards open one seconds after paying)
// waits for the payment's event still in the inbox, and then takes the credits back; a dispute of
// a payment the inbox holds nothing unfinished of is decided at once (disputes.test.ts). Driven
// without a worker, so the payment's event stays 'processing' as long as the test wants.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimEvents } from '../../../src/events/event-store.js';
import { businessModules } from '../../../src/modules/index.js';
import { disputeObject, sampleEvent } from '../../../src/stripe/sample-events.js';
import { databaseForFile } from '../../support/database.js';
import { givenOrder, incomingEvent, paidEvent, quotaOf } from '../../support/factories.js';
import { fulfilWith, handlersOf } from '../../support/handlers.js';

const database = databaseForFile();
const everyModule = businessModules.map((module) => handlersOf(module));

test('a dispute delivered while its payment is still processing waits for it, then takes the credits back', async () => {
  const order = await givenOrder(database);
  const payment = paidEvent(order);
  const paymentIntentId = (payment.data.object as { payment_intent: string }).payment_intent;
  await claimEvents(database.db, [incomingEvent(payment)], { maxAttempts: 10 });
  const withdrawn = sampleEvent(
    'charge.dispute.funds_withdrawn',
    disputeObject({ paymentIntentId, amount: order.amount, currency: order.currency, status: 'needs_response' }),
  );

  const [early] = await fulfilWith(database, everyModule, [withdrawn]);
  assert.deepEqual([early!.row.status, early!.row.attempts], ['processing', 0]);
  assert.match(
    early!.row.last_error ?? '',
    new RegExp(`no order paid by payment intent ${paymentIntentId} \\(yet\\): waiting for ${payment.id}, its payment's event`),
  );

  const [paid] = await fulfilWith(database, everyModule, [payment]);
  assert.equal(paid!.row.status, 'processed');
  const [late] = await fulfilWith(database, everyModule, [withdrawn]);
  assert.equal(late!.row.status, 'processed');
  assert.equal((await quotaOf(database, order.account_id)).granted, 0);
});
