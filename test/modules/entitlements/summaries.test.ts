// Stripe's active entitlement summaries made an account's entitlements: the API answers what the
// newest summary says, whatever order they arrive in and however often, and the app is told of
// each change of the account's set once (account.entitlements_updated, verified with
// standardwebhooks by the receiver).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomCustomerId, sampleEntitlement, summaryObject, summaryUpdatedEvent } from '../../../src/modules/entitlements/sample-events.js';
import { sampleEvent, thinNotification, type SampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent, waitingEvent } from '../../support/factories.js';
import { jobDone } from '../../support/jobs.js';
import { notifyingServiceForFile, notifyingTo, receivedWhere, type ReceivedNotification } from '../../support/notification-receiver.js';
import { startTestService, type TestService } from '../../support/service.js';
import { checkoutCompleted, subscribedThroughApi } from '../../support/subscriptions.js';
import { waitFor } from '../../support/wait-for.js';

const file = notifyingServiceForFile();
const UPDATED = 'account.entitlements_updated';
const LIST_PATH = '/v1/entitlements/active_entitlements';

/** An account with a Stripe customer, linked the one way: its subscription's Checkout Session completed, naming the customer. */
async function linkedCustomer(): Promise<{ accountId: string; customerId: string }> {
  const subscription = await subscribedThroughApi(file);
  const customerId = randomCustomerId();
  const completed = checkoutCompleted({ ...subscription, customerId });
  assert.equal((await file.service.deliver(completed)).status, 200);
  const row = await finishedEvent(file.database, completed.id);
  assert.equal(row.status, 'processed', `${row.last_error}`);
  return { accountId: subscription.accountId, customerId };
}

async function deliverProcessed(event: { id: string }, service: TestService = file.service): Promise<void> {
  assert.equal((await service.deliver(event)).status, 200);
  const row = await finishedEvent(file.database, event.id);
  assert.equal(row.status, 'processed', `${row.status}: ${row.last_error}`);
}

const updatesOf = (accountId: string) => () => file.receiver.unique().filter((r) => r.type === UPDATED && r.data.account_id === accountId);

/** The account's notifications, once `count` have arrived, in `sequence` order. */
async function told(accountId: string, count: number): Promise<ReceivedNotification[]> {
  const found = await waitFor(
    `${count} ${UPDATED} of ${accountId}`,
    receivedWhere(file.receiver, (r) => r.type === UPDATED && r.data.account_id === accountId, count),
  );
  return found.sort((a, b) => Number(a.data.sequence) - Number(b.data.sequence));
}

async function entitlementsOf(accountId: string): Promise<{ keys: string[]; as_of: unknown; body: Record<string, unknown> }> {
  const reply = await file.service.call('GET', `/api/accounts/${accountId}/entitlements`);
  assert.equal(reply.status, 200);
  const list = reply.body.entitlements as Array<{ lookup_key: string }>;
  return { keys: list.map((e) => e.lookup_key), as_of: reply.body.as_of, body: reply.body };
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const fullReadsOf = (customerId: string) =>
  file.service.stripe.requests.filter((r) => r.method === 'GET' && r.path === LIST_PATH && r.params.customer === customerId);

describe('a summary', () => {
  test('makes the account entitled, a later one removes a feature; each change told once', async (t) => {
    const { accountId, customerId } = await linkedCustomer();
    const at = Math.floor(Date.now() / 1000) - 60;
    const first = summaryUpdatedEvent(customerId, ['dashboard', 'export'], at);
    const delivered = Date.now();
    await deliverProcessed(first);
    const [added] = await told(accountId, 1);
    t.diagnostic(`summary 2xx to notification received: ${Date.now() - delivered} ms`);
    assert.deepEqual(added!.data, {
      account_id: accountId,
      added: ['dashboard', 'export'],
      removed: [],
      entitlements: ['dashboard', 'export'],
      as_of: iso(at),
      balance: { granted: 0, used: 0, remaining: 0 },
      sequence: added!.data.sequence,
    });
    const removal = summaryUpdatedEvent(customerId, ['dashboard'], at + 1);
    await deliverProcessed(removal);
    const [, removed] = await told(accountId, 2);
    assert.deepEqual(
      [removed!.data.added, removed!.data.removed, removed!.data.entitlements, removed!.data.as_of],
      [[], ['export'], ['dashboard'], iso(at + 1)],
    );
    assert.equal(Number(removed!.data.sequence), Number(added!.data.sequence) + 1);

    const now = await entitlementsOf(accountId);
    assert.deepEqual(now.body, {
      account_id: accountId,
      entitlements: [{ lookup_key: 'dashboard', feature_id: 'feat_test_dashboard', name: null }],
      as_of: iso(at + 1),
    });
    const one = async (key: string) => (await file.service.call('GET', `/api/accounts/${accountId}/entitlements/${key}`)).body;
    assert.deepEqual(await one('dashboard'), { account_id: accountId, lookup_key: 'dashboard', active: true, as_of: iso(at + 1) });
    assert.deepEqual(await one('export'), { account_id: accountId, lookup_key: 'export', active: false, as_of: iso(at + 1) });
    const view = await file.service.call('GET', `/admin/api/accounts/${accountId}`);
    assert.deepEqual(
      (view.body.records as Array<{ kind: string }>).filter((r) => r.kind === 'entitlement'),
      [{ kind: 'entitlement', id: 'dashboard', fields: { feature_id: 'feat_test_dashboard', name: null, as_of: iso(at + 1) } }],
    );
    assert.equal(updatesOf(accountId)().length, 2);
  });

  test('thin and snapshot of one summary, redelivered and twinned, tell once', async () => {
    const { accountId, customerId } = await linkedCustomer();
    const at = Math.floor(Date.now() / 1000) - 30;
    const snapshot = summaryUpdatedEvent(customerId, ['reports'], at);
    file.service.stripe.addEvent({ ...snapshot });
    const thin = thinNotification(snapshot);
    assert.equal(thin.related_object, null, 'Stripe names no related object for a summary: only its snapshot event');
    await deliverProcessed(thin);
    // The same happening, delivered both ways: the inbox claims it once (snapshot_claims).
    assert.equal((await file.service.deliver(snapshot)).status, 200);
    const twin = await finishedEvent(file.database, snapshot.id);
    assert.deepEqual([twin.status, twin.duplicate_of], ['duplicate', thin.id]);
    await deliverProcessed(sampleEvent(snapshot.type, snapshot.data.object, { created: at }));
    assert.equal((await file.service.deliver(snapshot)).status, 200);
    const [only] = await told(accountId, 1);
    assert.deepEqual(only!.data.added, ['reports']);
    // Everything the four deliveries could tell has been: the outbox commits with each outcome.
    assert.equal(updatesOf(accountId)().length, 1);
    assert.deepEqual((await entitlementsOf(accountId)).keys, ['reports']);
  });

  test('with has_more is read whole from Stripe: 250 entitlements over three pages', async (t) => {
    const { accountId, customerId } = await linkedCustomer();
    const all = Array.from({ length: 250 }, (_, i) => sampleEntitlement(`feature_${String(i).padStart(3, '0')}`));
    file.service.stripe.setActiveEntitlements(customerId, all);
    const event = sampleEvent('entitlements.active_entitlement_summary.updated', summaryObject(customerId, all), {
      created: Math.floor(Date.now() / 1000) - 10,
    });
    assert.equal((event.data.object.entitlements as { has_more: boolean }).has_more, true);
    const delivered = Date.now();
    await deliverProcessed(event);
    const [update] = await told(accountId, 1);
    t.diagnostic(`has_more summary 2xx to notification received: ${Date.now() - delivered} ms`);
    assert.equal((update!.data.added as string[]).length, 250);
    const reads = fullReadsOf(customerId);
    assert.deepEqual(
      reads.map((r) => [r.params.limit, r.params.starting_after]),
      [
        ['100', undefined],
        ['100', 'ent_test_feature_099'],
        ['100', 'ent_test_feature_199'],
      ],
    );
    const now = await entitlementsOf(accountId);
    assert.equal(now.keys.length, 250);
    assert.deepEqual((now.body.entitlements as unknown[])[0], { lookup_key: 'feature_000', feature_id: 'feat_test_feature_000', name: 'Feature feature_000' });
    assert.equal(updatesOf(accountId)().length, 1);
  });

  test('of the same second as the one held, and different, is settled by reading Stripe', async () => {
    const { accountId, customerId } = await linkedCustomer();
    const at = Math.floor(Date.now() / 1000) - 20;
    await deliverProcessed(summaryUpdatedEvent(customerId, ['alpha'], at));
    await told(accountId, 1);
    assert.equal(fullReadsOf(customerId).length, 0);
    file.service.stripe.setActiveEntitlements(customerId, [sampleEntitlement('beta')]);
    await deliverProcessed(summaryUpdatedEvent(customerId, ['gamma'], at));
    const [, settled] = await told(accountId, 2);
    assert.deepEqual([settled!.data.added, settled!.data.removed, settled!.data.entitlements], [['beta'], ['alpha'], ['beta']]);
    assert.equal(fullReadsOf(customerId).length, 1);
    assert.deepEqual((await entitlementsOf(accountId)).keys, ['beta']);
    assert.equal(updatesOf(accountId)().length, 2);
  });

  test('settled by a read of Stripe that lists an entitlement of the other mode: none of that read is applied', async () => {
    const { accountId, customerId } = await linkedCustomer();
    const at = Math.floor(Date.now() / 1000) - 20;
    await deliverProcessed(summaryUpdatedEvent(customerId, ['alpha'], at));
    await told(accountId, 1);
    file.service.stripe.setActiveEntitlements(customerId, [sampleEntitlement('beta'), { ...sampleEntitlement('live'), livemode: true }]);
    await deliverProcessed(summaryUpdatedEvent(customerId, ['gamma'], at));
    await waitFor(
      'the read, and its job to end',
      async () => fullReadsOf(customerId).length > 0 && (await jobDone(file.database.db, `entitlements_read_active:${customerId}`)),
    );
    assert.deepEqual((await entitlementsOf(accountId)).keys, ['alpha']);
    assert.equal(fullReadsOf(customerId).length, 1, 'not read again: the answer would be the same');
    assert.equal(updatesOf(accountId)().length, 1);
  });

  test('for a customer whose link is on its way waits, and is woken by the link', async () => {
    const subscription = await subscribedThroughApi(file);
    const customerId = randomCustomerId();
    const summary = summaryUpdatedEvent(customerId, ['early'], Math.floor(Date.now() / 1000) - 5);
    assert.equal((await file.service.deliver(summary)).status, 200);
    const waiting = await waitingEvent(file.database, summary.id);
    assert.deepEqual([waiting.waits_for, waiting.attempts], [[`customer:${customerId}`], 0]);
    const linked = Date.now();
    await deliverProcessed(checkoutCompleted({ ...subscription, customerId }));
    const row = await finishedEvent(file.database, summary.id);
    // Woken by the link's commit, no attempt spent on waiting: not retried on a schedule.
    assert.deepEqual([row.status, row.attempts], ['processed', 0]);
    assert.ok(Date.now() - linked < 5_000);
    const [update] = await told(subscription.accountId, 1);
    assert.deepEqual(update!.data.entitlements, ['early']);
    assert.deepEqual((await entitlementsOf(subscription.accountId)).keys, ['early']);
  });
});

describe('summaries out of order', () => {
  let second: TestService;
  before(async () => {
    second = await startTestService(file.database, { stripe: file.service.stripe, env: notifyingTo(file.receiver) });
  });
  after(() => second?.close());

  test('in reverse order: the newest is kept, the older ones tell nothing', async () => {
    const { accountId, customerId } = await linkedCustomer();
    const at = Math.floor(Date.now() / 1000) - 40;
    const events = [
      summaryUpdatedEvent(customerId, ['a'], at),
      summaryUpdatedEvent(customerId, ['a', 'b'], at + 1),
      summaryUpdatedEvent(customerId, ['b'], at + 2),
    ];
    for (const event of events.toReversed()) await deliverProcessed(event);
    const [only] = await told(accountId, 1);
    assert.deepEqual([only!.data.entitlements, only!.data.as_of], [['b'], iso(at + 2)]);
    assert.deepEqual(await entitlementsOf(accountId).then((e) => [e.keys, e.as_of]), [['b'], iso(at + 2)]);
    assert.equal(updatesOf(accountId)().length, 1);
  });

  test('concurrently to two instances: the newest is kept, and what was told ends with it', async () => {
    const { accountId, customerId } = await linkedCustomer();
    const at = Math.floor(Date.now() / 1000) - 40;
    const events: SampleEvent[] = Array.from({ length: 6 }, (_, i) => summaryUpdatedEvent(customerId, [`v${i}`, 'base'], at + i));
    await Promise.all(events.toReversed().map((event, i) => deliverProcessed(event, i % 2 === 0 ? file.service : second)));
    const { keys, as_of } = await entitlementsOf(accountId);
    assert.deepEqual([keys, as_of], [['base', 'v5'], iso(at + 5)]);
    const last = await waitFor('the notification of the newest summary', () => {
      const all = updatesOf(accountId)();
      const newest = all.sort((a, b) => Number(b.data.sequence) - Number(a.data.sequence))[0];
      return Promise.resolve(newest?.data.as_of === iso(at + 5) && all);
    });
    // Each told change moved forward in Stripe's time, and the app's sequence numbers them in order.
    const asOf = last.sort((a, b) => Number(a.data.sequence) - Number(b.data.sequence)).map((r) => String(r.data.as_of));
    assert.deepEqual(asOf, [...asOf].sort());
    assert.equal(new Set(asOf).size, asOf.length);
    assert.deepEqual(last.at(-1)!.data.entitlements, ['base', 'v5']);
  });
});
