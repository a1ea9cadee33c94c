// POST /api/accounts/:id/runs with a quantity and an Idempotency-Key, GET /api/accounts/:id/runs
// and POST /api/accounts/:id/runs/:run_id/reverse: an app that retries a run, one after the other
// or all at once, is charged once; every run is listed, and gives its credits back at most once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { addGrants } from '../../../src/modules/ledger/account-credits.js';
import { newAccountId } from '../../support/factories.js';
import { serviceForFile, type HttpReply } from '../../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

async function accountWith(credits: number): Promise<string> {
  const accountId = newAccountId();
  await file.database.db.transaction().execute((tx) => addGrants(tx, [{ accountId, credits }]));
  return accountId;
}

const newKey = () => `key-${randomUUID()}`;
const keyed = (key: string | undefined) => (key === undefined ? {} : { headers: { 'idempotency-key': key } });
const run = (accountId: string, body?: unknown, key?: string): Promise<HttpReply> =>
  file.service.call('POST', `/api/accounts/${accountId}/runs`, { ...(body !== undefined && { body }), ...keyed(key) });
const reverse = (accountId: string, runId: unknown, key?: string): Promise<HttpReply> =>
  file.service.call('POST', `/api/accounts/${accountId}/runs/${String(runId)}/reverse`, keyed(key));
const listed = (accountId: string, query = ''): Promise<HttpReply> => file.service.call('GET', `/api/accounts/${accountId}/runs${query}`);

async function quota(accountId: string): Promise<{ used: unknown; remaining: unknown }> {
  const reply = await file.service.call('GET', `/api/accounts/${accountId}/quota`);
  assert.equal(reply.status, 200);
  return { used: reply.body.used, remaining: reply.body.remaining };
}

async function runIds(accountId: string): Promise<unknown[]> {
  const reply = await listed(accountId);
  assert.equal(reply.status, 200);
  return (reply.body.runs as Array<{ run_id: unknown }>).map((r) => r.run_id);
}

describe('a run', () => {
  test('uses the quantity asked, answers {kind: credits, remaining, run_id, quantity}, and is listed', async () => {
    const accountId = await accountWith(10);
    const reply = await run(accountId, { quantity: 3 });
    assert.equal(reply.status, 201);
    assert.deepEqual(Object.keys(reply.body).sort(), ['kind', 'quantity', 'remaining', 'run_id']);
    assert.equal(reply.body.kind, 'credits');
    assert.equal(reply.body.remaining, 7);
    assert.equal(reply.body.quantity, 3);
    assert.match(String(reply.body.run_id), /^run_[0-9a-f]{32}$/);
    assert.deepEqual(await quota(accountId), { used: 3, remaining: 7 });

    const list = await listed(accountId);
    assert.equal(list.status, 200);
    const [only, ...more] = list.body.runs as Array<Record<string, unknown>>;
    assert.equal(more.length, 0);
    assert.deepEqual({ ...only, created_at: typeof only?.created_at }, { run_id: reply.body.run_id, quantity: 3, created_at: 'string', reversed_at: null });
    assert.equal(list.body.next_cursor, null);
  });

  test('without a body uses one credit, as before quantities', async () => {
    const accountId = await accountWith(10);
    const reply = await run(accountId);
    assert.equal(reply.status, 201);
    assert.equal(reply.body.remaining, 9);
    assert.equal(reply.body.quantity, 1);
  });

  test('asking for more than is left is 402 and uses nothing', async () => {
    const accountId = await accountWith(3);
    const reply = await run(accountId, { quantity: 4 });
    assert.equal(reply.status, 402);
    assert.match(String(reply.body.error), /fewer than 4 credits left, nothing was used/);
    assert.deepEqual(await quota(accountId), { used: 0, remaining: 3 });
    assert.deepEqual(await runIds(accountId), []);
  });

  test('a quantity that is not a whole number from 1 to 1000000 is a 400 naming it, and uses nothing', async () => {
    const accountId = await accountWith(2_000_000);
    for (const quantity of [0, -1, 1.5, '2', null, true, 1_000_001]) {
      const reply = await run(accountId, { quantity });
      assert.equal(reply.status, 400, `quantity ${JSON.stringify(quantity)}`);
      assert.match(String(reply.body.error), /^quantity: must be a whole number of credits from 1 to 1000000$/);
    }
    const unknown = await run(accountId, { qty: 2 });
    assert.equal(unknown.status, 400);
    assert.match(String(unknown.body.error), /"qty"/);
    assert.deepEqual(await quota(accountId), { used: 0, remaining: 2_000_000 });
  });
});

describe('a run with an Idempotency-Key', () => {
  test('sent twice uses the credits once and answers the first run twice', async () => {
    const accountId = await accountWith(10);
    const key = newKey();
    const first = await run(accountId, { quantity: 2 }, key);
    const retry = await run(accountId, { quantity: 2 }, key);
    assert.equal(first.status, 201);
    assert.deepEqual(retry, first);
    assert.deepEqual(await quota(accountId), { used: 2, remaining: 8 });
    assert.deepEqual(await runIds(accountId), [first.body.run_id]);
  });

  test('sent by ten requests at once uses the credits once: each is the one run or a 409', async () => {
    const accountId = await accountWith(10);
    const key = newKey();
    const replies = await Promise.all(Array.from({ length: 10 }, () => run(accountId, { quantity: 2 }, key)));
    const made = replies.filter((r) => r.status === 201);
    assert.deepEqual(
      replies.filter((r) => r.status !== 201 && r.status !== 409),
      [],
    );
    assert.ok(made.length >= 1);
    for (const reply of made) assert.deepEqual(reply.body, made[0]!.body);
    assert.deepEqual(await quota(accountId), { used: 2, remaining: 8 });
    assert.deepEqual(await runIds(accountId), [made[0]!.body.run_id]);
    // Once the first has answered, a retry is its answer.
    assert.deepEqual((await run(accountId, { quantity: 2 }, key)).body, made[0]!.body);
  });

  test('reused with another quantity or account is 422 and uses nothing', async () => {
    const accountId = await accountWith(10);
    const otherAccount = await accountWith(10);
    const key = newKey();
    assert.equal((await run(accountId, { quantity: 1 }, key)).status, 201);
    for (const reply of [await run(accountId, { quantity: 2 }, key), await run(otherAccount, { quantity: 1 }, key)]) {
      assert.equal(reply.status, 422);
      assert.match(String(reply.body.error), /already used with a different request/);
    }
    assert.deepEqual(await quota(accountId), { used: 1, remaining: 9 });
    assert.deepEqual(await quota(otherAccount), { used: 0, remaining: 10 });
  });

  test('whose answer was lost is answered with its run, however late: a run calls nothing a key could be forgotten by', async () => {
    const accountId = await accountWith(10);
    const key = newKey();
    const first = await run(accountId, { quantity: 3 }, key);
    assert.equal(first.status, 201);
    // As a crash between the run's commit and its answer leaves the key, found two days later.
    await file.database.db
      .updateTable('api_idempotency_keys')
      .set({ response_status: null, response_body: null, leased_until: null, created_at: sql`now() - interval '2 days'` })
      .where('idempotency_key', '=', `run:${key}`)
      .execute();
    const late = await run(accountId, { quantity: 3 }, key);
    assert.deepEqual([late.status, late.body], [201, first.body]);
    assert.deepEqual(await quota(accountId), { used: 3, remaining: 7 });
  });

  test('refused with 402 keeps nothing: the same key runs once credits are bought', async () => {
    const accountId = await accountWith(1);
    const key = newKey();
    assert.equal((await run(accountId, { quantity: 2 }, key)).status, 402);
    await file.database.db.transaction().execute((tx) => addGrants(tx, [{ accountId, credits: 1 }]));
    const reply = await run(accountId, { quantity: 2 }, key);
    assert.equal(reply.status, 201);
    assert.equal(reply.body.remaining, 0);
  });

  test('is optional: without one, two requests are two runs', async () => {
    const accountId = await accountWith(10);
    assert.equal((await run(accountId)).status, 201);
    assert.equal((await run(accountId)).status, 201);
    assert.deepEqual(await quota(accountId), { used: 2, remaining: 8 });
  });
});

describe('reversing a run', () => {
  test('gives its credits back once: its key replays the answer, another reversal is 409', async () => {
    const accountId = await accountWith(10);
    const made = await run(accountId, { quantity: 3 });
    const runId = made.body.run_id;
    const key = newKey();
    const reversed = await reverse(accountId, runId, key);
    assert.equal(reversed.status, 200);
    assert.deepEqual(
      { ...reversed.body, reversed_at: typeof reversed.body.reversed_at },
      { run_id: runId, quantity: 3, reversed_at: 'string', remaining: 10, credits_revoked: 0 },
    );
    assert.deepEqual(await quota(accountId), { used: 0, remaining: 10 });

    assert.deepEqual(await reverse(accountId, runId, key), reversed);
    for (const again of [await reverse(accountId, runId, newKey()), await reverse(accountId, runId)]) {
      assert.equal(again.status, 409);
      assert.match(String(again.body.error), /already reversed/);
      assert.deepEqual([again.body.run_id, again.body.reversed_at], [runId, reversed.body.reversed_at]);
    }
    assert.deepEqual(await quota(accountId), { used: 0, remaining: 10 });
    const list = await listed(accountId);
    assert.equal((list.body.runs as Array<{ reversed_at: unknown }>)[0]?.reversed_at, reversed.body.reversed_at);
  });

  test('ten times at once, with ten keys, gives the credits back once', async () => {
    const accountId = await accountWith(10);
    const runId = (await run(accountId, { quantity: 4 })).body.run_id;
    assert.equal((await run(accountId, { quantity: 1 })).status, 201);
    const replies = await Promise.all(Array.from({ length: 10 }, () => reverse(accountId, runId, newKey())));
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    assert.deepEqual(await quota(accountId), { used: 1, remaining: 9 });
  });

  test('of another account, or of no run, is 404 and gives nothing back; a malformed run_id is 400', async () => {
    const accountId = await accountWith(10);
    const otherAccount = await accountWith(10);
    const runId = (await run(accountId, { quantity: 2 })).body.run_id;
    for (const reply of [await reverse(otherAccount, runId), await reverse(accountId, `run_${'0'.repeat(32)}`)]) {
      assert.equal(reply.status, 404);
      assert.match(String(reply.body.error), /has no run run_/);
    }
    assert.deepEqual(await quota(accountId), { used: 2, remaining: 8 });
    assert.deepEqual(await quota(otherAccount), { used: 0, remaining: 10 });

    const malformed = await reverse(accountId, 'ord_123');
    assert.equal(malformed.status, 400);
    assert.match(String(malformed.body.error), /^run_id: must be an id/);
    assert.equal((await reverse(accountId, runId)).status, 200, 'still the owner may reverse it');
  });
});

describe('the list of runs', () => {
  test('is newest first, in pages of `limit` joined by next_cursor', async () => {
    const accountId = await accountWith(100);
    const made: unknown[] = [];
    for (let quantity = 1; quantity <= 5; quantity++) made.push((await run(accountId, { quantity })).body.run_id);
    const newestFirst = made.toReversed();
    assert.deepEqual(await runIds(accountId), newestFirst);

    const pages: unknown[][] = [];
    let query = '?limit=2';
    for (;;) {
      const page = await listed(accountId, query);
      assert.equal(page.status, 200);
      pages.push((page.body.runs as Array<{ run_id: unknown }>).map((r) => r.run_id));
      if (page.body.next_cursor === null) break;
      query = `?limit=2&cursor=${page.body.next_cursor as string}`;
    }
    assert.deepEqual(pages, [newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4)]);
    assert.deepEqual(await runIds(newAccountId()), []);
  });

  test('a limit or cursor out of bounds, or an unknown parameter, is a 400 naming it', async () => {
    const accountId = await accountWith(10);
    const otherAccount = await accountWith(10);
    const othersRun = String((await run(otherAccount)).body.run_id);
    const cases: Array<[string, RegExp]> = [
      ['?limit=0', /^limit: must be a whole number from 1 to 100$/],
      ['?limit=101', /^limit: must be a whole number from 1 to 100$/],
      ['?limit=1.5', /^limit: must be a whole number from 1 to 100$/],
      ['?limit=many', /^limit: must be a whole number from 1 to 100$/],
      ['?cursor=nope', /^cursor: must be an id/],
      [`?cursor=${othersRun}`, /^cursor: names no run of this account/],
      ['?page=2', /"page"/],
    ];
    for (const [query, error] of cases) {
      const reply = await listed(accountId, query);
      assert.equal(reply.status, 400, query);
      assert.match(String(reply.body.error), error, query);
    }
  });
});
