// An event no module acts on is finished by its claim, with no job: stored as fulfilment would
// have ended it ('processed' for a type only recorded, 'ignored' for one nobody lists). One a
// running release acts on (event_types_acted_on, registered at start) gets its job whichever
// release claims it, so a deploy that starts acting on a type loses none of its events to the
// release before it. One of the other mode still gets its job, and fails visibly there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { claimEvents } from '../../src/events/event-store.js';
import { intakeRule, recordOnly } from '../../src/fulfilment/finish-at-intake.js';
import { exampleObject, randomStripeId, sampleEvent, thinNotification } from '../../src/stripe/sample-events.js';
import { eventRow, finishedEvent, incomingEvent } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const file = serviceForFile();

const paymentSucceeded = () => sampleEvent('payment_intent.succeeded', { ...exampleObject('payment_intent'), id: randomStripeId('pi') });

async function accepted(event: { id: string }) {
  const reply = await file.service.deliver(event);
  assert.deepEqual([reply.status, reply.body], [200, { received: true }]);
  return eventRow(file.database, event.id);
}

test("a type every module only records is stored 'processed' by its claim, with no job", async () => {
  const row = await accepted(paymentSucceeded());
  assert.deepEqual([row.status, row.job_key, row.last_error, row.finished_at !== null], ['processed', null, null, true]);
});

test("a type no module lists is stored 'ignored'; a thin one says why", async () => {
  const snapshot = await accepted(sampleEvent('customer.created', { id: randomStripeId('cus'), object: 'customer' }));
  assert.deepEqual([snapshot.status, snapshot.job_key, snapshot.last_error], ['ignored', null, null]);
  const thin = await accepted(thinNotification(sampleEvent('customer.updated', { id: randomStripeId('cus'), object: 'customer' }), { withSnapshot: false }));
  assert.deepEqual([thin.status, thin.job_key, thin.last_error], ['ignored', null, 'no module handles v1.customer.updated']);
});

test('a second delivery of a finished event is still answered as a duplicate', async () => {
  const event = paymentSucceeded();
  await accepted(event);
  assert.deepEqual((await file.service.deliver(event)).body, { received: true, duplicate: true });
});

test('an event of the other mode gets its job, and fails there for its mode', async () => {
  const live = sampleEvent('payment_intent.succeeded', { ...exampleObject('payment_intent'), id: randomStripeId('pi') }, { livemode: true });
  await accepted(live);
  const row = await finishedEvent(file.database, live.id);
  assert.equal(row.status, 'failed');
  assert.match(row.last_error ?? '', /livemode mismatch/);
});

test('a type this release only records, but another running release acts on, gets its job', async () => {
  // The release that acts on it registered it when it started (sql/0031).
  await sql`insert into event_types_acted_on (event_type) values ('customer.created')`.execute(file.database.db);
  try {
    const rule = intakeRule([{ 'customer.created': recordOnly }], false);
    assert.equal(rule.finish(incomingEvent(sampleEvent('customer.created', { id: randomStripeId('cus'), object: 'customer' })))?.status, 'processed');
    const event = incomingEvent(sampleEvent('customer.created', { id: randomStripeId('cus'), object: 'customer' }));
    assert.deepEqual(await claimEvents(file.database.db, [event], { maxAttempts: 10, finishAtIntake: (e) => rule.finish(e) }), ['claimed']);
    // Enqueued (its row names its job), and run by this service's worker, which lists no handler.
    const row = await finishedEvent(file.database, event.eventId);
    assert.ok(row.job_key !== null, 'enqueued with a job');
    assert.deepEqual([row.status, row.last_error], ['ignored', null]);
  } finally {
    await sql`delete from event_types_acted_on where event_type = 'customer.created'`.execute(file.database.db);
  }
});

test('the service registers the types its modules act on, and none it only records', async () => {
  const { rows } = await sql<{ event_type: string }>`select event_type from event_types_acted_on`.execute(file.database.db);
  const types = rows.map((r) => r.event_type);
  for (const type of ['checkout.session.completed', 'charge.refunded', 'invoice.paid', 'charge.dispute.created']) assert.ok(types.includes(type), type);
  for (const type of ['payment_intent.succeeded', 'charge.succeeded']) assert.ok(!types.includes(type), type);
});

test("a claim that adds no job sends no NOTIFY: a notifying commit waits for every other one's", async () => {
  const listener = new pg.Client({ connectionString: file.database.url });
  await listener.connect();
  try {
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query('listen "jobs:insert"');
    const rule = intakeRule([{ 'payment_intent.succeeded': recordOnly }], false);
    const options = { maxAttempts: 10, finishAtIntake: (e: Parameters<typeof rule.finish>[0]) => rule.finish(e) };
    await claimEvents(file.database.db, [incomingEvent(paymentSucceeded()), incomingEvent(paymentSucceeded())], options);
    // Then one that needs its job: its notification comes after any the first claim sent.
    await claimEvents(file.database.db, [incomingEvent(sampleEvent('charge.refunded', exampleObject('charge')))], options);
    await waitFor('the second claim to notify', () => Promise.resolve(heard.length > 0));
    assert.equal(heard.length, 1, `heard: ${heard.join(' | ')}`);
    assert.match(heard[0]!, /"count":1\}$/);
  } finally {
    await listener.end();
  }
});
