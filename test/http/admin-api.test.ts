// /admin/api/*: the operator's JSON API. Bearer ADMIN_TOKEN on every route (the API token is not
// enough), status in its documented shape, event look-up and replay. The worker role is off so
// delivered events stay 'processing' and every count is the test's own doing.
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { sql } from 'kysely';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';

import { givenOrder, paidEvent } from '../support/factories.js';
import { deleteJobs, fulfilmentJobs } from '../support/jobs.js';
import { API_TOKEN, serviceForFile } from '../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });
beforeEach(async () => {
  await sql`truncate stripe_events`.execute(file.database.db);
  await deleteJobs(file.database.db);
});

/** Delivers an event and then fails it as the worker would after MAX_ATTEMPTS. */
async function givenFailedEvent(lastError = 'amount mismatch: order 4900 chf, session 100 chf'): Promise<string> {
  const event = paidEvent(await givenOrder(file.database));
  assert.equal((await file.service.deliver(event)).status, 200);
  await sql`update stripe_events set status = 'failed', attempts = 10, last_error = ${lastError}, finished_at = now()
            where event_id = ${event.id}`.execute(file.database.db);
  await deleteJobs(file.database.db, [event.id]);
  return event.id;
}

/** The events the queued fulfilment jobs carry. */
const queuedEvents = async () => (await fulfilmentJobs(file.database.db)).flatMap((job) => job.event_ids);

describe('without the admin token', () => {
  const routes: Array<[string, string]> = [
    ['GET', '/admin'],
    ['GET', '/admin/api/status'],
    ['GET', '/admin/api/events/evt_any'],
    ['POST', '/admin/api/events/evt_any/replay'],
    ['POST', '/admin/api/sweep'],
  ];
  for (const [method, path] of routes) {
    test(`${method} ${path} is 401 with no token and with the API token`, async () => {
      for (const token of [null, API_TOKEN]) {
        const reply = await file.service.call(method, path, { token });
        assert.equal(reply.status, 401, `token ${String(token)}`);
        assert.equal(typeof reply.body.error, 'string');
      }
    });
  }

  test('a replay with the API token leaves a failed event failed and enqueues nothing', async () => {
    const eventId = await givenFailedEvent();
    assert.equal((await file.service.call('POST', `/admin/api/events/${eventId}/replay`, { token: API_TOKEN })).status, 401);
    const row = await file.database.db.selectFrom('stripe_events').select(['status', 'attempts']).where('event_id', '=', eventId).executeTakeFirstOrThrow();
    assert.deepEqual(row, { status: 'failed', attempts: 10 });
    assert.deepEqual(await queuedEvents(), []);
  });
});

describe('GET /admin/api/status', () => {
  test('has the documented shape on an empty inbox', async () => {
    const reply = await file.service.call('GET', '/admin/api/status');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body.counts, { processing: 0, processed: 0, ignored: 0, duplicate: 0, failed: 0 });
    assert.equal(reply.body.oldest_processing_age_seconds, null);
    assert.equal(reply.body.jobs_queued, 0);
    assert.equal(reply.body.events_queued, 0);
    assert.ok(reply.body.last_sweep_at === null || typeof reply.body.last_sweep_at === 'string');
  });

  test('counts move with deliveries and failures', async () => {
    const order = await givenOrder(file.database);
    assert.equal((await file.service.deliver(paidEvent(order))).status, 200);
    assert.equal((await file.service.deliver(sampleEvent('charge.refunded', exampleObject('charge')))).status, 200);
    // Only recorded: stored finished by its claim (src/fulfilment/finish-at-intake.ts), no job.
    assert.equal((await file.service.deliver(sampleEvent('charge.succeeded', exampleObject('charge')))).status, 200);
    await givenFailedEvent();

    const reply = await file.service.call('GET', '/admin/api/status');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body.counts, { processing: 2, processed: 1, ignored: 0, duplicate: 0, failed: 1 });
    assert.equal(typeof reply.body.oldest_processing_age_seconds, 'number');
    assert.ok((reply.body.oldest_processing_age_seconds as number) >= 0);
    // The two processing events' jobs wait (one each: they were claimed one after the other); the
    // failed one has none.
    assert.equal(reply.body.jobs_queued, 2);
    assert.equal(reply.body.events_queued, 2);
  });
});

describe('GET /admin/api/events/:id', () => {
  test('shows the documented fields of a stored event', async () => {
    const eventId = await givenFailedEvent('unknown order ord_x');
    const reply = await file.service.call('GET', `/admin/api/events/${eventId}`);
    assert.equal(reply.status, 200);
    const row = await file.database.db.selectFrom('stripe_events').select('object_id').where('event_id', '=', eventId).executeTakeFirstOrThrow();
    const { event_id, type, object_id, status, attempts, last_error } = reply.body;
    assert.deepEqual(
      { event_id, type, object_id, status, attempts, last_error },
      { event_id: eventId, type: 'checkout.session.completed', object_id: row.object_id, status: 'failed', attempts: 10, last_error: 'unknown order ord_x' },
    );
    assert.match(String(object_id), /^cs_/);
  });

  test('carries what an operator looks at first: the payload, the other events of the object, the order', async () => {
    const order = await givenOrder(file.database);
    const first = paidEvent(order);
    const second = paidEvent(order, { sessionId: first.data.object.id as string });
    for (const event of [first, second]) assert.equal((await file.service.deliver(event)).status, 200);
    const reply = await file.service.call('GET', `/admin/api/events/${second.id}`);
    assert.deepEqual(reply.body.payload, second);
    assert.deepEqual(
      (reply.body.related as Array<{ event_id: string }>).map((e) => e.event_id),
      [first.id],
    );
    assert.deepEqual(reply.body.records, [
      {
        kind: 'order',
        id: order.order_id,
        fields: { status: 'pending', account_id: order.account_id, credits: order.credits, amount: order.amount, currency: order.currency },
      },
    ]);
  });

  test('is 404 for an unknown event', async () => {
    const reply = await file.service.call('GET', '/admin/api/events/evt_unknown');
    assert.equal(reply.status, 404);
    assert.equal(typeof reply.body.error, 'string');
  });
});

describe('GET /admin/api/search', () => {
  test('by an order id finds the events whose metadata names it, not those holding it elsewhere or naming a longer id', async () => {
    const order = await givenOrder(file.database);
    const paid = paidEvent(order);
    const elsewhere = sampleEvent('charge.succeeded', { ...exampleObject('charge'), id: randomStripeId('ch'), description: order.order_id });
    const longer = sampleEvent('checkout.session.expired', {
      ...exampleObject('checkout.session'),
      id: randomStripeId('cs'),
      metadata: { order_id: `${order.order_id}_2` },
    });
    for (const event of [paid, elsewhere, longer]) assert.equal((await file.service.deliver(event)).status, 200);
    const reply = await file.service.call('GET', `/admin/api/search?q=${order.order_id}`);
    assert.equal(reply.status, 200);
    assert.deepEqual(
      (reply.body as unknown as Array<{ event_id: string }>).map((e) => e.event_id),
      [paid.id],
    );
  });
});

describe('POST /admin/api/events/:id/replay', () => {
  test('moves a failed event back to processing with a fresh count, and enqueues its job', async () => {
    const eventId = await givenFailedEvent();
    const reply = await file.service.call('POST', `/admin/api/events/${eventId}/replay`);
    assert.equal(reply.status, 202);
    assert.deepEqual(reply.body, { event_id: eventId, status: 'processing' });

    const row = await file.database.db
      .selectFrom('stripe_events')
      .select(['status', 'attempts', 'last_error', 'finished_at'])
      .where('event_id', '=', eventId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { status: 'processing', attempts: 0, last_error: null, finished_at: null });
    assert.deepEqual(await queuedEvents(), [eventId]);
  });

  test('is 404 for an unknown event and enqueues nothing', async () => {
    const reply = await file.service.call('POST', '/admin/api/events/evt_unknown/replay');
    assert.equal(reply.status, 404);
    assert.equal(typeof reply.body.error, 'string');
    assert.deepEqual(await queuedEvents(), []);
  });
});
