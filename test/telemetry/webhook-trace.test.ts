// With tracing on, one checkout.session.completed is followed from the webhook to the app's
// notification (docs/operations.md, "Tracing"): the request span, the claim's group commit linked
// to it, the job's CONSUMER span linked to the context stored with the event, the handler and
// outbox spans inside it, and the delivery's CLIENT span whose context the app receives. A replay
// and a reclaim by the sweep link back to the first delivery; a Stripe call gets its own CLIENT span.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SpanKind } from '@opentelemetry/api';
import { sql } from 'kysely';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { sweepStaleEvents } from '../../src/maintenance/sweep.js';
import { startTracing } from '../../src/tracing/start-tracing.js';
import type { Tracing } from '../../src/tracing/tracing-sdk.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventRow, finishedEvent, givenOrder, newAccountId, paidEvent } from '../support/factories.js';
import { deleteJobs } from '../support/jobs.js';
import { notifyingServiceForFile, receivedWhere } from '../support/notification-receiver.js';
import { startTestService, testConfig } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
// Before the service starts, as main.ts does: its parts decide at start whether to trace.
before(async () => {
  tracing = (await startTracing(testConfig(), { exporter }))!;
});
const file = notifyingServiceForFile();

async function spans(): Promise<ReadableSpan[]> {
  await tracing.flush();
  return exporter.getFinishedSpans();
}

const one = (all: ReadableSpan[], match: (span: ReadableSpan) => boolean, what: string): ReadableSpan => {
  const found = all.filter(match);
  assert.equal(found.length, 1, `one ${what}, found ${found.length}: ${all.map((s) => s.name).join(', ')}`);
  return found[0]!;
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const linksTo = (span: ReadableSpan, target: ReadableSpan) => span.links.some((link) => link.context.spanId === target.spanContext().spanId);
const webhookSpanOf = (all: ReadableSpan[], eventId: string) =>
  one(all, (s) => s.name === 'POST /webhooks/stripe' && s.attributes['stripe.event.id'] === eventId, 'webhook span');

describe('one paid checkout, from the webhook to the notification', () => {
  test('its spans, their parents, links and attributes, and the traceparent the app receives', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    assert.equal((await file.service.deliver(event)).status, 200);
    const [notification] = await waitFor(
      'the order.paid notification',
      receivedWhere(file.receiver, (n) => n.type === 'order.paid' && n.data.order_id === order.order_id),
    );
    // The delivery's span ends once the answer is read, a moment after the app has the request.
    const all = await waitFor('the delivery span', async () => {
      const finished = await spans();
      return finished.some((s) => s.attributes['stripe_inbox.notification.id'] === notification!.id) && finished;
    });

    const webhook = webhookSpanOf(all, event.id);
    assert.equal(webhook.kind, SpanKind.SERVER);
    assert.deepEqual(
      {
        method: webhook.attributes['http.request.method'],
        route: webhook.attributes['http.route'],
        status: webhook.attributes['http.response.status_code'],
        type: webhook.attributes['stripe.event.type'],
        outcome: webhook.attributes['stripe_inbox.claim.outcome'],
      },
      { method: 'POST', route: '/webhooks/stripe', status: 200, type: 'checkout.session.completed', outcome: 'claimed' },
    );
    assert.equal((await eventRow(file.database, event.id)).trace_context, `00-${webhook.spanContext().traceId}-${webhook.spanContext().spanId}-01`);

    one(all, (s) => s.name === 'claim stripe_events' && linksTo(s, webhook), 'claim span linked to the request');

    const job = one(all, (s) => s.name === 'process process_stripe_event' && linksTo(s, webhook), 'job span linked to the request');
    assert.equal(job.kind, SpanKind.CONSUMER);
    assert.equal(job.attributes['messaging.destination.name'], 'process_stripe_event');
    assert.equal(job.attributes['messaging.operation.type'], 'process');

    const credits = one(all, (s) => parentOf(s) === job.spanContext().spanId && s.attributes['stripe_inbox.module'] === 'credits', 'credits handler span');
    assert.equal(credits.name, 'handler credits checkout.session.completed');
    assert.deepEqual(
      {
        handler: credits.attributes['stripe_inbox.handler'],
        type: credits.attributes['stripe.event.type'],
        ids: credits.attributes['stripe.event.ids'],
        attempts: credits.attributes['stripe_inbox.attempts'],
        outcomes: credits.attributes['stripe_inbox.outcomes'],
      },
      { handler: 'checkout.session.completed', type: 'checkout.session.completed', ids: [event.id], attempts: [1], outcomes: ['processed'] },
    );
    // The subscriptions' module is given the event too, and says it is not its own.
    const billing = one(all, (s) => parentOf(s) === job.spanContext().spanId && s.attributes['stripe_inbox.module'] === 'billing', 'billing handler span');
    assert.deepEqual(billing.attributes['stripe_inbox.outcomes'], ['ignored']);

    const outbox = one(all, (s) => s.name === 'outbox write' && parentOf(s) === credits.spanContext().spanId, 'outbox span in the handler');
    assert.deepEqual(
      {
        types: outbox.attributes['stripe_inbox.notification.types'],
        keys: outbox.attributes['stripe_inbox.notification.keys'],
        accounts: outbox.attributes['stripe_inbox.account.ids'],
      },
      { types: ['order.paid'], keys: [`order.paid:${order.order_id}`], accounts: [order.account_id] },
    );

    const delivery = one(all, (s) => s.kind === SpanKind.CLIENT && parentOf(s) === outbox.spanContext().spanId, 'delivery span');
    assert.equal(delivery.name, 'POST');
    assert.deepEqual(
      {
        url: delivery.attributes['url.full'],
        endpoint: delivery.attributes['stripe_inbox.endpoint'],
        attempt: delivery.attributes['stripe_inbox.notification.attempt'],
        status: delivery.attributes['http.response.status_code'],
        id: delivery.attributes['stripe_inbox.notification.id'],
      },
      { url: file.receiver.url, endpoint: file.receiver.url, attempt: 1, status: 204, id: notification!.id },
    );
    // A job's span starts its own trace (it may hold several events), linked to each event's webhook.
    assert.equal(delivery.spanContext().traceId, job.spanContext().traceId, "the delivery is in the job's trace");
    assert.equal(notification!.traceparent, `00-${delivery.spanContext().traceId}-${delivery.spanContext().spanId}-01`);
  });

  test("a replayed event's job span links back to the first delivery's context", async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    await file.service.deliver(event);
    const first = await finishedEvent(file.database, event.id);
    assert.equal((await file.service.call('POST', `/admin/api/events/${event.id}/replay`)).status, 202);
    await waitFor('the replay to finish', async () => {
      const row = await finishedEvent(file.database, event.id);
      return row.finished_at!.getTime() > first.finished_at!.getTime() ? row : undefined;
    });
    const all = await spans();
    const webhook = webhookSpanOf(all, event.id);
    const runs = all.filter((s) => s.name === 'process process_stripe_event' && linksTo(s, webhook));
    assert.equal(runs.length, 2, 'the first run and the replay both link to the webhook');
    // The replay does not touch the stored context: it still names the first delivery.
    assert.equal((await eventRow(file.database, event.id)).trace_context, first.trace_context);
  });

  test('a Stripe call through StripeCalls is a CLIENT span with its method, path, status and idempotency key', async () => {
    const reply = await file.service.call('POST', '/api/checkout', { body: { package_id: 'starter', account_id: newAccountId() } });
    assert.equal(reply.status, 201);
    const all = await spans();
    const call = one(all, (s) => s.kind === SpanKind.CLIENT && s.attributes['url.path'] === '/v1/checkout/sessions', 'Stripe call span');
    assert.deepEqual(
      {
        method: call.attributes['http.request.method'],
        status: call.attributes['http.response.status_code'],
        key: call.attributes['stripe_inbox.stripe.idempotency_key_present'],
      },
      { method: 'POST', status: 200, key: true },
    );
    assert.match(call.name, /^stripe /);
  });
});

// A container killed after its 2xx, its job lost with it: the sweep re-enqueues the row, and the
// run that finally fulfils it links to the webhook that first took it, through the stored context.
// Its own database, so that no worker of this file's service takes the job before it is lost.
describe('an event reclaimed by the sweep', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await database?.close();
  });

  test("its job span links back to the first delivery's context", async () => {
    const web = await startTestService(database, { env: { ROLE: 'web' } });
    const order = await givenOrder(database);
    const event = paidEvent(order);
    try {
      assert.equal((await web.deliver(event)).status, 200);
    } finally {
      await web.close();
    }
    const claimed = await eventRow(database, event.id);
    await deleteJobs(database.db, [event.id]);
    await sql`update stripe_events set enqueued_at = now() - interval '1 hour' where event_id = ${event.id}`.execute(database.db);
    const swept = await sweepStaleEvents(database.db, { staleAfterMs: 60_000, maxAttempts: 5 });
    assert.deepEqual(swept.event_ids, [event.id]);

    const worker = await startTestService(database, { env: { ROLE: 'worker' } });
    try {
      assert.equal((await finishedEvent(database, event.id)).status, 'processed');
    } finally {
      await worker.close();
    }
    const all = await spans();
    const webhook = webhookSpanOf(all, event.id);
    one(all, (s) => s.name === 'process process_stripe_event' && linksTo(s, webhook), 'job span of the reclaimed event linked to its webhook');
    assert.equal((await eventRow(database, event.id)).trace_context, claimed.trace_context, "the sweep keeps the first delivery's context");
  });
});
