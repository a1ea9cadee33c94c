// Regressions found by fuzzing POST /webhooks/stripe (test/http/webhook-fuzz.test.ts), one plain
// example each: a signature that never expired (and, beside it, one under a scheme that is not
// v1, which random decoys cannot catch), and signed payloads that Postgres cannot store,
// which were 503s that Stripe would retry for days. Plus the property behind the last group: what
// the webhook accepts, Postgres's jsonb input takes (checked against Postgres itself).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { unstorableJson } from '../../src/stripe/unstorable-json.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';
import { freshEvent, hmac, now, signed, webhookJudge, type WebhookJudge } from '../support/webhook-deliveries.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_501);

let database: TestDatabase;
let service: TestService;
let judge: WebhookJudge;

before(async () => {
  database = await createTestDatabase();
  service = await startTestService(database, { env: { ROLE: 'web' } });
  judge = webhookJudge(database, service.url);
});
after(async () => {
  await service.close();
  await database.close();
});

const check = <T>(property: fc.IAsyncProperty<T>, numRuns: number) => fc.assert(property, { seed: SEED, numRuns });
/** Any UTF-16 code unit: NUL, controls, lone surrogates included. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

describe('each was a 200 that should not be, or a 503 that Stripe would retry for days', () => {
  const bodyOf = (event: unknown) => Buffer.from(JSON.stringify(event));
  /** Signed with the given t, over the given signed-as timestamp (what Stripe's verifier computes). */
  const signedAt = (body: Buffer, t: string, signedAs = t) => ({ 'stripe-signature': `t=${t},v1=${hmac(WEBHOOK_SECRET, signedAs, body)}` });
  const withinObject = (extra: string) => {
    const text = JSON.stringify(freshEvent());
    return Buffer.from(text.replace('"object":"charge"', `"object":"charge",${extra}`));
  };

  test('a t that is not a number (Stripe then signs over "NaN." and skips its age check) is refused', async () => {
    for (const t of ['abc', '', 'NaN']) {
      const body = bodyOf(freshEvent());
      assert.equal(await judge.deliver(body, signedAt(body, t, 'NaN')), 'rejected', `t=${t}`);
    }
    const body = bodyOf(freshEvent());
    assert.equal(await judge.deliver(body, { 'stripe-signature': `t,v1=${hmac(WEBHOOK_SECRET, 'NaN', body)}` }), 'rejected');
  });

  test('a valid HMAC under any scheme but v1 (v0, V1) is refused, and the same value as v1 accepted', async () => {
    for (const scheme of ['v0', 'V1', 'v2']) {
      const body = bodyOf(freshEvent());
      assert.equal(await judge.deliver(body, { 'stripe-signature': `t=${now()},${scheme}=${hmac(WEBHOOK_SECRET, String(now()), body)}` }), 'rejected', scheme);
    }
    const body = bodyOf(freshEvent());
    assert.equal(await judge.deliver(body, { 'stripe-signature': `t=${now()},v1=${hmac(WEBHOOK_SECRET, String(now()), body)}` }), 'accepted');
  });

  test('a t far in the future is refused, 13 digits and more included (the old check read at most 12)', async () => {
    for (const t of [String(now() + 330), '99999999999', '9999999999999', '99999999999999']) {
      const body = bodyOf(freshEvent());
      assert.equal(await judge.deliver(body, signedAt(body, t)), 'rejected', `t=${t}`);
    }
    const body = bodyOf(freshEvent());
    assert.equal(await judge.deliver(body, signedAt(body, String(now() + 270))), 'accepted');
  });

  test('an event nested 100k levels deep is 400, not a Postgres stack overflow; 500 levels are fine', async () => {
    const deep = withinObject(`"deep":${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    assert.equal(await judge.deliver(deep, { 'stripe-signature': signed(deep) }), 'rejected');
    const fine = withinObject(`"deep":${'['.repeat(500)}${']'.repeat(500)}`);
    assert.equal(await judge.deliver(fine, { 'stripe-signature': signed(fine) }), 'accepted');
  });

  test('unpaired surrogate escapes and numbers beyond numeric are 400; a pair, 1e308 and 5e-324 are fine', async () => {
    for (const [extra, expected] of [
      ['"s":"\\ud800"', 'rejected'],
      ['"s":"\\udc00\\ud800"', 'rejected'],
      ['"n":1e-20000', 'rejected'],
      ['"n":1e200000', 'rejected'],
      ['"s":"\\ud834\\udd1e"', 'accepted'],
      ['"n":[1e308,5e-324]', 'accepted'],
      // A literal backslash before u0000 is text, not NUL (the old check refused it).
      ['"s":"C:\\\\u0000"', 'accepted'],
    ] as const) {
      const body = withinObject(extra);
      assert.equal(await judge.deliver(body, { 'stripe-signature': signed(body) }), expected, extra);
    }
  });

  test('created past 9999-12-31 is 400, not an invalid Date sent to Postgres', async () => {
    for (const created of [253_402_300_800, 1e13, Number.MAX_SAFE_INTEGER]) {
      const body = bodyOf({ ...freshEvent(), created });
      assert.equal(await judge.deliver(body, { 'stripe-signature': signed(body) }), 'rejected', String(created));
    }
  });

  test('a data.object.id of 10k random characters is 400, not an index row Postgres cannot hold', async () => {
    const random = Array.from({ length: 10_000 }, () => String.fromCharCode(0x21 + Math.floor(Math.random() * 94))).join('');
    for (const [id, expected] of [
      [random, 'rejected'],
      ['x'.repeat(256), 'rejected'],
      ['', 'rejected'],
      ['x'.repeat(255), 'accepted'],
    ] as const) {
      const event = freshEvent();
      const body = bodyOf({ ...event, data: { object: { ...event.data.object, id } } });
      assert.equal(await judge.deliver(body, { 'stripe-signature': signed(body) }), expected, `${id.length} characters`);
    }
  });
});

describe('what the webhook accepts, Postgres stores', () => {
  /** Whether Postgres's jsonb input takes this text. */
  async function postgresStores(text: string): Promise<boolean> {
    try {
      await sql`select ${text}::jsonb`.execute(database.db);
      return true;
    } catch {
      return false;
    }
  }
  const digits = (max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: max });

  test('strings: refused exactly when Postgres refuses them (NUL, unpaired surrogates), whatever the escapes', async () => {
    const escaped = fc
      .array(fc.tuple(fc.integer({ min: 0, max: 0xffff }), fc.boolean()), { maxLength: 6 })
      .map((units) => `"${units.map(([unit, upper]) => `\\u${unit.toString(16).padStart(4, '0')[upper ? 'toUpperCase' : 'toLowerCase']()}`).join('')}"`);
    const text = fc.oneof(
      fc.string({ unit: anyUnit, maxLength: 20 }).map((s) => JSON.stringify({ [s]: s })),
      escaped,
      fc.constant('"\\\\u0000"'),
    );
    await check(
      fc.asyncProperty(text, async (json) => assert.equal(unstorableJson(json) === undefined, await postgresStores(json), json)),
      200,
    );
  });

  test('numbers and nesting: whatever is accepted fits numeric and Postgres’s stack; what JSON.stringify writes is accepted', async () => {
    const number = fc
      .record({ minus: fc.boolean(), int: digits(1200), frac: fc.option(digits(1200)), exp: fc.option(fc.integer({ min: -20_000, max: 20_000 })) })
      .map(
        ({ minus, int, frac, exp }) => `${minus ? '-' : ''}${int.replace(/^0+(?=\d)/, '')}${frac === null ? '' : `.${frac}`}${exp === null ? '' : `e${exp}`}`,
      );
    const text = fc.oneof(
      number.map((n) => `{"n":[${n}]}`),
      fc.double().map((n) => JSON.stringify({ n })),
      fc.integer({ min: 1, max: 2_000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
    );
    await check(
      fc.asyncProperty(text, async (json) => {
        const refusal = unstorableJson(json);
        if (refusal === undefined) assert.ok(await postgresStores(json), `accepted but Postgres refuses: ${json.slice(0, 80)}`);
        const written = /^\{"n":-?\d{1,30}(?:\.\d+)?(?:e[+-]?\d{1,3})?\}$/.test(json) || /^\[{1,512}\]*$/.test(json);
        if (written) assert.equal(refusal, undefined, json.slice(0, 80));
      }),
      200,
    );
  });
});
