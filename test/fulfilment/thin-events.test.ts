// Thin notifications (an event destination's thin payloads) reach the same outcomes as snapshot
// events: fulfilled once, from the snapshot event they name or the object they point at, fetched
// from (fake) Stripe outside the fulfilment transaction. A snapshot event and the thin
// notification naming it are one happening: whichever is claimed first fulfils, the other ends
// 'duplicate', in either order and when two instances take them at once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signDelivery, thinNotification, type SampleEvent, type ThinNotification } from '../../src/stripe/sample-events.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventRow, finishedEvent, givenOrder, grantsOf, paidEvent, quotaOf } from '../support/factories.js';
import { startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';

let database: TestDatabase;
let service: TestService;
before(async () => {
  database = await createTestDatabase();
  service = await startTestService(database);
});
after(async () => {
  await service?.close();
  await database?.close();
});

/** A paid order's checkout.session.completed, known to (fake) Stripe: its event listed, its session retrievable. */
async function paidOrderEvent(): Promise<{ orderId: string; accountId: string; credits: number; event: SampleEvent }> {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  service.stripe.addEvent({ ...event });
  service.stripe.addObject(event.data.object);
  return { orderId: order.order_id, accountId: order.account_id, credits: order.credits, event };
}

const fetchesOf = (path: string) => service.stripe.requests.filter((r) => r.method === 'GET' && r.path === path).length;

describe('a thin notification alone', () => {
  test('naming its snapshot event: the snapshot event is fetched and the order granted once', async () => {
    const paid = await paidOrderEvent();
    const thin = thinNotification(paid.event);
    assert.equal((await service.deliver(thin)).status, 200);

    const row = await finishedEvent(database, thin.id);
    assert.deepEqual([row.status, row.type, row.object_id, row.last_error], ['processed', 'v1.checkout.session.completed', paid.event.data.object.id, null]);
    assert.deepEqual(await grantsOf(database, paid.orderId), [{ event_id: thin.id, credits: paid.credits }]);
    assert.equal((await quotaOf(database, paid.accountId)).granted, paid.credits);
    assert.equal(fetchesOf(`/v1/events/${paid.event.id}`), 1);
  });

  test('without a snapshot event: the related object is fetched by its URL and the order granted once', async () => {
    const paid = await paidOrderEvent();
    const thin = thinNotification(paid.event, { withSnapshot: false });
    assert.equal((await service.deliver(thin)).status, 200);

    assert.equal((await finishedEvent(database, thin.id)).status, 'processed');
    assert.deepEqual(await grantsOf(database, paid.orderId), [{ event_id: thin.id, credits: paid.credits }]);
    assert.equal(fetchesOf(thin.related_object!.url), 1);
  });

  test('delivered again, it is stored once and fetched once', async () => {
    const paid = await paidOrderEvent();
    const thin = thinNotification(paid.event);
    assert.equal((await service.deliver(thin)).status, 200);
    await finishedEvent(database, thin.id);
    assert.equal((await service.deliver(thin)).status, 200);

    assert.equal((await eventRow(database, thin.id)).status, 'processed');
    assert.equal(fetchesOf(`/v1/events/${paid.event.id}`), 1);
    assert.deepEqual(await grantsOf(database, paid.orderId), [{ event_id: thin.id, credits: paid.credits }]);
  });
});

describe('a snapshot event and the thin notification naming it', () => {
  for (const first of ['snapshot', 'thin'] as const) {
    test(`${first} first: it fulfils, the other ends duplicate of it without a fetch or a job`, async () => {
      const paid = await paidOrderEvent();
      const thin = thinNotification(paid.event);
      const [leader, follower] = first === 'snapshot' ? [paid.event, thin] : [thin, paid.event];
      assert.equal((await service.deliver(leader)).status, 200);
      assert.equal((await finishedEvent(database, leader.id)).status, 'processed');
      const fetches = service.stripe.requests.length;
      assert.equal((await service.deliver(follower)).status, 200);

      const row = await eventRow(database, follower.id);
      assert.deepEqual([row.status, row.duplicate_of, row.attempts, row.job_key], ['duplicate', leader.id, 0, null]);
      assert.ok(row.finished_at instanceof Date);
      assert.equal(service.stripe.requests.length, fetches);
      assert.deepEqual(await grantsOf(database, paid.orderId), [{ event_id: leader.id, credits: paid.credits }]);
    });
  }

  test('delivered at once to two instances, 20 pairs: each happening fulfilled once, its other event its duplicate', async () => {
    const second = await startTestService(database, { stripe: service.stripe });
    try {
      const pairs = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const paid = await paidOrderEvent();
          return { paid, thin: thinNotification(paid.event) };
        }),
      );
      const replies = await Promise.all(
        pairs.flatMap(({ paid, thin }, i) => {
          const [a, b] = i % 2 === 0 ? [service, second] : [second, service];
          return [a.deliver(paid.event), b.deliver(thin)];
        }),
      );
      assert.ok(
        replies.every((r) => r.status === 200),
        JSON.stringify(replies.filter((r) => r.status !== 200)),
      );

      for (const { paid, thin } of pairs) {
        const rows = [await finishedEvent(database, paid.event.id), await finishedEvent(database, thin.id)];
        const owner = rows.find((r) => r.status === 'processed');
        const other = rows.find((r) => r.status === 'duplicate');
        assert.ok(owner && other, `statuses ${rows.map((r) => r.status).join(', ')}`);
        assert.equal(other.duplicate_of, owner.event_id);
        assert.deepEqual(await grantsOf(database, paid.orderId), [{ event_id: owner.event_id, credits: paid.credits }]);
      }
    } finally {
      await second.close();
    }
  });
});

describe('types no module handles', () => {
  test('a v2 ping is answered 200, stored and ignored with the reason, nothing fetched', async () => {
    const ping: ThinNotification = {
      id: `evt_test_ping_${Date.now()}`,
      object: 'v2.core.event',
      type: 'v2.core.event_destination.ping',
      created: new Date().toISOString(),
      livemode: false,
      related_object: { id: 'ed_test_61Tm', type: 'v2.core.event_destination', url: '/v2/core/event_destinations/ed_test_61Tm' },
    };
    const requests = service.stripe.requests.length;
    assert.equal((await service.deliver(ping)).status, 200);

    const row = await finishedEvent(database, ping.id);
    assert.deepEqual([row.status, row.last_error, row.object_id], ['ignored', 'no module handles v2.core.event_destination.ping', 'ed_test_61Tm']);
    assert.equal(service.stripe.requests.length, requests);
  });

  test('a v1 type no module lists is ignored without a fetch', async () => {
    const paid = await paidOrderEvent();
    const thin = { ...thinNotification(paid.event), type: 'v1.customer.created' };
    assert.equal((await service.deliver(thin)).status, 200);

    const row = await finishedEvent(database, thin.id);
    assert.deepEqual([row.status, row.last_error], ['ignored', 'no module handles v1.customer.created']);
    assert.equal(fetchesOf(`/v1/events/${paid.event.id}`), 0);
  });
});

describe('a malformed thin notification', () => {
  const cases: Array<[string, (thin: ThinNotification) => unknown, string]> = [
    [
      'a v1 type without related_object nor snapshot_event',
      (thin) => ({ ...thin, related_object: null, snapshot_event: undefined }),
      'malformed event: related_object is missing or invalid',
    ],
    [
      'a related object URL of another host',
      (thin) => ({ ...thin, related_object: { ...thin.related_object, url: 'https://example.com/v1/x' } }),
      'malformed event: related_object.url is missing or invalid',
    ],
    ['created that is not a time', (thin) => ({ ...thin, created: 'yesterday' }), 'malformed event: created is missing or invalid'],
    [
      'an object Stripe never sends',
      (thin) => ({ ...thin, object: 'v3.core.event' }),
      'malformed event: object is missing or invalid (expected "event" or "v2.core.event")',
    ],
  ];
  for (const [name, mangle, message] of cases) {
    test(`${name}: 400 naming it, nothing stored`, async () => {
      const paid = await paidOrderEvent();
      const thin = thinNotification(paid.event);
      const body = mangle(thin);
      // Not through deliver(): the SDK's parser would (rightly) refuse some of these first.
      const delivery = signDelivery(body, WEBHOOK_SECRET);
      const reply = await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body: delivery.body, headers: delivery.headers });
      assert.equal(reply.status, 400);
      assert.deepEqual(await reply.json(), { error: message });
      const stored = await database.db.selectFrom('stripe_events').select('event_id').where('event_id', '=', thin.id).execute();
      assert.deepEqual(stored, []);
    });
  }
});
