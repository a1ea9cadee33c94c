// POST /webhooks/stripe: persist before acknowledge, one event id one row one job, and every
// bad delivery a 4xx with nothing stored (docs/design.md, invariants 1 and 3). The worker role is
// off here so rows stay as the webhook left them.
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { sql } from 'kysely';
import { exampleObject, sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';

import { givenOrder, paidEvent } from '../support/factories.js';
import { deleteJobs, fulfilmentJobs, holdJobs } from '../support/jobs.js';
import { PREVIOUS_WEBHOOK_SECRET, serviceForFile, WEBHOOK_SECRET } from '../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });
beforeEach(async () => {
  await sql`truncate stripe_events`.execute(file.database.db);
  await deleteJobs(file.database.db);
});

async function stored(): Promise<{ events: number; jobs: number }> {
  const { rows } = await sql<{ events: number; jobs: number }>`
    select (select count(*)::int from stripe_events) as events,
           (select count(*)::int from graphile_worker.jobs) as jobs`.execute(file.database.db);
  return rows[0]!;
}

async function post(body: string | Buffer, headers: Record<string, string>) {
  const response = await fetch(`${file.service.url}/webhooks/stripe`, { method: 'POST', body, headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a valid delivery', () => {
  test('is stored as processing with its job before the 200', async () => {
    const order = await givenOrder(file.database);
    const event = paidEvent(order);
    const reply = await file.service.deliver(event);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { received: true });

    const row = await file.database.db.selectFrom('stripe_events').selectAll().where('event_id', '=', event.id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'processing');
    assert.equal(row.type, 'checkout.session.completed');
    assert.equal(row.object_id, event.data.object.id);
    assert.equal(row.livemode, false);
    assert.equal(row.stripe_created_at.getTime(), event.created * 1000);
    assert.deepEqual(row.payload, event);
    // Its job is the one its row names, and a worker taking it gets the batch payload.
    assert.deepEqual(
      (await fulfilmentJobs(file.database.db)).map((j) => ({ key: j.key, event_ids: j.event_ids })),
      [{ key: row.job_key, event_ids: [event.id] }],
    );
    const worker = await holdJobs(file.database, 1);
    await worker.release();
    assert.deepEqual(
      worker.jobs.map((j) => j.payload),
      [[{ eventId: event.id }]],
    );
  });

  test('signed with the previous secret during a rotation is accepted', async () => {
    const reply = await file.service.deliver(sampleEvent('charge.refunded', exampleObject('charge')), { secret: PREVIOUS_WEBHOOK_SECRET });
    assert.equal(reply.status, 200);
    assert.deepEqual(await stored(), { events: 1, jobs: 1 });
  });

  test('of a type whose object has no id is stored with a null object_id', async () => {
    const event = sampleEvent('invoice.upcoming', { object: 'invoice', amount_due: 100 });
    assert.equal((await file.service.deliver(event)).status, 200);
    const row = await file.database.db.selectFrom('stripe_events').select('object_id').where('event_id', '=', event.id).executeTakeFirstOrThrow();
    assert.equal(row.object_id, null);
  });

  test("whose signed bytes start with a byte-order mark is stored without it (Postgres's JSON input refuses one)", async () => {
    const event = sampleEvent('charge.succeeded', exampleObject('charge'));
    const signed = signDelivery(`\ufeff${JSON.stringify(event)}`, WEBHOOK_SECRET);
    const reply = await post(signed.body, signed.headers);
    assert.equal(reply.status, 200);
    const row = await file.database.db.selectFrom('stripe_events').select('payload').where('event_id', '=', event.id).executeTakeFirstOrThrow();
    assert.deepEqual(row.payload, event);
  });

  test('with a byte-order mark that its signature does not cover is refused: the signature is over every byte', async () => {
    const event = sampleEvent('charge.succeeded', exampleObject('charge'));
    const signed = signDelivery(event, WEBHOOK_SECRET);
    const reply = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(signed.body)]), signed.headers);
    assert.equal(reply.status, 400);
    assert.deepEqual(await stored(), { events: 0, jobs: 0 });
  });

  test('of a type we do not handle is still answered 200 (a 4xx would be retried for days)', async () => {
    const reply = await file.service.deliver(sampleEvent('customer.created', { id: 'cus_123', object: 'customer' }));
    assert.equal(reply.status, 200);
  });
});

describe('the same event id delivered again', () => {
  test('answers 200 duplicate and adds no row and no job', async () => {
    const event = paidEvent(await givenOrder(file.database));
    assert.deepEqual((await file.service.deliver(event)).body, { received: true });
    // A retry carries a new signature and timestamp, the same id.
    const again = await file.service.deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 60 });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { received: true, duplicate: true });
    assert.deepEqual(await stored(), { events: 1, jobs: 1 });
  });

  test('50 concurrent deliveries make one row, one job, one claim and no 5xx', async () => {
    const event = paidEvent(await givenOrder(file.database));
    const replies = await Promise.all(Array.from({ length: 50 }, () => file.service.deliver(event)));
    assert.deepEqual(new Set(replies.map((r) => r.status)), new Set([200]));
    assert.equal(replies.filter((r) => r.body.duplicate !== true).length, 1);
    assert.deepEqual(await stored(), { events: 1, jobs: 1 });
  });

  test('a second Event object for the same action is its own row (collapsed later, by business key)', async () => {
    const order = await givenOrder(file.database);
    // Both of the Checkout Session the order stored.
    const first = paidEvent(order);
    const second = paidEvent(order);
    assert.equal((await file.service.deliver(first)).status, 200);
    assert.deepEqual((await file.service.deliver(second)).body, { received: true });
    assert.deepEqual(await stored(), { events: 2, jobs: 2 });
  });
});

describe('a bad delivery is a 400 and stores nothing', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const cases: Array<[string, () => { body: string; headers: Record<string, string> }]> = [
    [
      'no Stripe-Signature header',
      () => ({ body: JSON.stringify(sampleEvent('charge.succeeded', exampleObject('charge'))), headers: { 'content-type': 'application/json' } }),
    ],
    ['a signature by an unknown secret', () => signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), 'whsec_someone_else')],
    [
      'a timestamp older than the 300 s tolerance',
      () => signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), WEBHOOK_SECRET, { timestamp: now() - 301 }),
    ],
    [
      'a timestamp in the future beyond the tolerance',
      () => signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), WEBHOOK_SECRET, { timestamp: now() + 301 }),
    ],
    [
      'a body changed after signing',
      () => {
        const signed = signDelivery(sampleEvent('charge.succeeded', exampleObject('charge')), WEBHOOK_SECRET);
        return { ...signed, body: signed.body.replace('"livemode": false', '"livemode": true') };
      },
    ],
    ['a garbled header', () => ({ body: '{}', headers: { 'stripe-signature': 't=abc,v1=,,,=', 'content-type': 'application/json' } })],
    ['a signed body that is not JSON', () => signDelivery('not json {', WEBHOOK_SECRET)],
    ['a signed JSON that is not an event', () => signDelivery({ hello: 'world' }, WEBHOOK_SECRET)],
    ['a signed event without data.object', () => signDelivery({ ...sampleEvent('charge.succeeded', {}), data: {} }, WEBHOOK_SECRET)],
    ['a signed event with a NUL character', () => signDelivery(sampleEvent('charge.succeeded', { id: 'ch_1', description: 'a\u0000b' }), WEBHOOK_SECRET)],
  ];
  for (const [name, make] of cases) {
    test(name, async () => {
      const { body, headers } = make();
      const reply = await post(body, headers);
      assert.equal(reply.status, 400);
      assert.equal(typeof reply.body.error, 'string');
      assert.deepEqual(await stored(), { events: 0, jobs: 0 });
    });
  }

  test('a body over 1 MiB is a 413 whatever the signature, with or without Content-Length', async () => {
    const event = sampleEvent('charge.succeeded', { ...exampleObject('charge'), description: 'x'.repeat(1024 * 1024) });
    const signed = signDelivery(event, WEBHOOK_SECRET);
    assert.equal((await post(signed.body, signed.headers)).status, 413);
    // Chunked: no Content-Length, so the limit is enforced while streaming.
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(signed.body));
        controller.close();
      },
    });
    const response = await fetch(`${file.service.url}/webhooks/stripe`, { method: 'POST', body: chunked, headers: signed.headers, duplex: 'half' });
    assert.equal(response.status, 413);
    assert.deepEqual(await stored(), { events: 0, jobs: 0 });
  });
});

describe('atomicity of claim and enqueue', () => {
  test('when the job cannot be enqueued the event is not stored either, and the answer is 503', async () => {
    // Break enqueueing inside the same transaction as the insert: the insert must roll back.
    await sql`alter function graphile_worker.add_jobs(graphile_worker.job_spec[], boolean) rename to add_jobs_disabled`.execute(file.database.db);
    try {
      const reply = await file.service.deliver(paidEvent(await givenOrder(file.database)));
      assert.equal(reply.status, 503);
      assert.deepEqual(await stored(), { events: 0, jobs: 0 });
    } finally {
      await sql`alter function graphile_worker.add_jobs_disabled(graphile_worker.job_spec[], boolean) rename to add_jobs`.execute(file.database.db);
    }
  });
});
