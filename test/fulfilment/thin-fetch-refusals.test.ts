// What the worker refuses to fetch, or to act on once fetched, for a thin notification. Its
// related_object.url is fetched with our secret key, so a path that resolves outside Stripe's
// /v1/ and /v2/ API (dot segments, encoded or not, backslashes, an authority) is refused: 400 at
// the webhook, and 'failed' with nothing fetched for one stored another way (reconcile stores
// what Stripe's v2 list holds, an earlier release stored what it took). And what is fetched must
// be of the service's mode, as a delivered event must.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { claimEvents } from '../../src/events/event-store.js';
import { thinNotification, type ThinNotification } from '../../src/stripe/sample-events.js';
import { toIncomingNotification } from '../../src/stripe/webhook-event.js';
import { finishedEvent, givenOrder, grantsOf, paidEvent, refusedAtOnce } from '../support/factories.js';
import { serviceForFile } from '../support/service.js';

const file = serviceForFile();

/** A paid order's thin notification, its snapshot event and session known to (fake) Stripe. */
async function paidThin(options: { withSnapshot?: boolean } = {}) {
  const order = await givenOrder(file.database);
  const event = paidEvent(order);
  return { order, event, thin: thinNotification(event, options) };
}

const withUrl = (thin: ThinNotification, url: string): ThinNotification => ({ ...thin, related_object: { ...thin.related_object!, url } });

// Each of these, resolved the way a server resolves a path, is not under /v1/ or /v2/.
const ESCAPING_URLS = [
  '/v1/../../_ctl',
  '/v1/%2e%2e/%2E%2E/_ctl',
  '/v1/.%2e/_ctl',
  '/v1/..%2f..%2f_ctl',
  '/v1/%252e%252e/_ctl',
  '/v1/..\\..\\_ctl',
  '/v1/..%5c_ctl',
  '/v1/../%2f%2fevil.example/v1/x',
  '/v2/core/../../_ctl?expand[]=x',
  '/v1/%2E%2e/%2e%2E/_ctl',
  'https://evil.example/v1/x',
  '//evil.example/v1/x',
  '/v3/x',
  '/v1',
  '/v1/',
  // Not dot segments to the URL standard, but `..` to some servers, or bytes no Stripe URL has.
  '/v1/..;/_ctl',
  '/v1/%c0%ae%c0%ae/_ctl',
  '/v1/x\u0001/_ctl',
  '/v1/\t/evil.example',
  '/v1/caf\u00e9',
  `/v1/${'x'.repeat(2045)}`,
];

describe('a related_object.url that leaves Stripe’s API', () => {
  for (const url of ESCAPING_URLS) {
    // An error names a long URL by its start.
    const named = JSON.stringify(url.slice(0, 60)).slice(0, -1);
    test(`${named}" is answered 400 at the webhook, nothing stored`, async () => {
      const { thin } = await paidThin({ withSnapshot: false });
      const reply = await file.service.deliver(withUrl(thin, url));
      assert.equal(reply.status, 400);
      assert.match(String(reply.body.error), /related_object\.url/);
      assert.equal(await file.database.db.selectFrom('stripe_events').select('event_id').where('event_id', '=', thin.id).executeTakeFirst(), undefined);
    });

    test(`${named}", stored without the webhook (reconcile, an earlier release), ends failed naming it, nothing fetched`, async () => {
      const { order, event, thin } = await paidThin({ withSnapshot: false });
      file.service.stripe.addObject(event.data.object);
      const stored = withUrl(thin, url);
      const requestsBefore = file.service.stripe.requests.length;
      await claimEvents(file.database.db, [toIncomingNotification(stored, Buffer.from(JSON.stringify(stored)))], { maxAttempts: 10 });

      const row = await refusedAtOnce(file.database, thin.id, [named]);
      assert.match(row.last_error ?? '', /not a path of Stripe's \/v1\/ or \/v2\/ API/);
      assert.deepEqual(file.service.stripe.requests.slice(requestsBefore), []);
      assert.deepEqual(await grantsOf(file.database, order.order_id), []);
    });
  }

  for (const tail of ['?y=../..', '#/../../_ctl']) {
    test(`a URL whose query or fragment holds dot segments (${tail}) is fetched at its own path`, async () => {
      const { order, event, thin } = await paidThin({ withSnapshot: false });
      file.service.stripe.addObject(event.data.object);
      const url = thin.related_object!.url;
      const requestsBefore = file.service.stripe.requests.length;
      assert.equal((await file.service.deliver(withUrl(thin, url + tail))).status, 200);

      assert.equal((await finishedEvent(file.database, thin.id)).status, 'processed');
      assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: thin.id, credits: order.credits }]);
      assert.deepEqual(
        file.service.stripe.requests.slice(requestsBefore).map((r) => `${r.method} ${r.path}`),
        [`GET ${url}`],
      );
    });
  }

  test('a URL with harmless dot segments is fetched at the path they resolve to', async () => {
    const { order, event, thin } = await paidThin({ withSnapshot: false });
    file.service.stripe.addObject(event.data.object);
    const url = thin.related_object!.url;
    const dotted = withUrl(thin, url.replace('/v1/', '/v1/./invoices/../'));
    assert.equal((await file.service.deliver(dotted)).status, 200);

    assert.equal((await finishedEvent(file.database, thin.id)).status, 'processed');
    assert.deepEqual(await grantsOf(file.database, order.order_id), [{ event_id: thin.id, credits: order.credits }]);
    assert.ok(file.service.stripe.requests.some((r) => r.method === 'GET' && r.path === url));
  });
});

describe('what is fetched is of another mode than the service (test mode here)', () => {
  test('a test-mode notification whose snapshot event is live-mode ends failed, nothing granted', async () => {
    const { order, event, thin } = await paidThin();
    file.service.stripe.addEvent({ ...event, livemode: true });
    assert.equal((await file.service.deliver(thin)).status, 200);

    const row = await refusedAtOnce(file.database, thin.id, [event.id]);
    assert.match(row.last_error ?? '', /livemode mismatch: .*live-mode.*test-mode/);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });

  test('a test-mode notification whose related object is live-mode ends failed, nothing granted', async () => {
    const { order, event, thin } = await paidThin({ withSnapshot: false });
    file.service.stripe.addObject({ ...event.data.object, livemode: true });
    assert.equal((await file.service.deliver(thin)).status, 200);

    const row = await refusedAtOnce(file.database, thin.id, [thin.related_object!.url]);
    assert.match(row.last_error ?? '', /livemode mismatch: .*live-mode.*test-mode/);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });

  test('a snapshot event without livemode is refused too: it cannot say it is ours', async () => {
    const { order, event, thin } = await paidThin();
    file.service.stripe.addEvent({ ...event, livemode: undefined });
    assert.equal((await file.service.deliver(thin)).status, 200);

    const row = await refusedAtOnce(file.database, thin.id, [event.id]);
    assert.match(row.last_error ?? '', /livemode mismatch/);
    assert.deepEqual(await grantsOf(file.database, order.order_id), []);
  });
});
