// POST /webhooks/stripe under hostile input, property-based with fast-check,
// against the real service over HTTP. Every answer is either a 200 that stored exactly the event
// sent, with its job, or a 4xx whose body is {"error"} with one of a fixed set of messages and
// nothing stored; the process stays up and nothing goes unhandled. Where the outcome is known
// (a signature, an event's fields) a model says which it must be. Runs are seeded: a failure
// prints its seed and path; FUZZ_SEED=<n> npm test -- test/http/webhook-fuzz.test.ts tries another.
// What it found is pinned by plain examples in webhook-fuzz-regressions.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { after, afterEach, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { PREVIOUS_WEBHOOK_SECRET, startTestService, WEBHOOK_SECRET, type TestService } from '../support/service.js';
import { freshEvent, hmac, now, REJECTIONS, signed, verdict, webhookJudge, type WebhookJudge } from '../support/webhook-deliveries.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_260_501);
const MiB = 1024 * 1024;

let database: TestDatabase;
let service: TestService;
let judge: WebhookJudge;
const processFailures: unknown[] = [];
const recordFailure = (error: unknown) => void processFailures.push(error);

before(async () => {
  process.on('unhandledRejection', recordFailure).on('uncaughtException', recordFailure);
  database = await createTestDatabase();
  // Rate limiting stays on (every rejection passes through it) but far above what this sends.
  service = await startTestService(database, { env: { ROLE: 'web', RATE_LIMIT_PER_MINUTE: '1000000' } });
  judge = webhookJudge(database, service.url);
});
after(async () => {
  await service.close();
  await database.close();
  process.off('unhandledRejection', recordFailure).off('uncaughtException', recordFailure);
});
const RELEASE = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

// After each batch: the process still answers and nothing escaped to the process level.
afterEach(async () => {
  const health = await fetch(`${service.url}/healthz`);
  assert.deepEqual([health.status, await health.json()], [200, { ok: true, version: RELEASE }]);
  assert.deepEqual(processFailures, []);
});

const check = <T>(property: fc.IAsyncProperty<T>, numRuns: number) => fc.assert(property, { seed: SEED, numRuns });

// ---- arbitraries ---------------------------------------------------------------------------

/** Any UTF-16 code unit: NUL, controls, lone surrogates included. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
/** What fetch lets into a header value: space, visible ASCII and latin-1. */
const headerUnit = fc
  .integer({ min: 0x20, max: 0xff })
  .filter((c) => c !== 0x7f)
  .map((c) => String.fromCharCode(c));
const printableAscii = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
const hex64 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('hex'));

/** Ids and types of odd shapes and lengths; plain ones weigh most so that some runs pass. */
const oddString = fc.oneof(
  { arbitrary: fc.string({ unit: printableAscii, minLength: 1, maxLength: 40 }), weight: 16 },
  fc.constant(''),
  fc.string({ unit: anyUnit, minLength: 1, maxLength: 1 }),
  fc.string({ unit: printableAscii, minLength: 255, maxLength: 256 }),
  fc.string({ unit: printableAscii, minLength: 10_000, maxLength: 10_000 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 8 }),
  fc.string({ unit: fc.constantFrom(' ', '\t', 'a', '.'), minLength: 1, maxLength: 12 }),
  fc.string({ unit: anyUnit, maxLength: 300 }),
);

// ---- models (what the contract says, independently of how src/ checks it) -------------------

const isId = (value: unknown) => typeof value === 'string' && /^[\x21-\x7e]{1,255}$/.test(value);
/** Postgres's jsonb holds every string but those with NUL or a lone surrogate. */
const storableString = (s: string) => !s.includes('\0') && !/\p{Cs}/u.test(s);
function storable(value: unknown): boolean {
  if (typeof value === 'string') return storableString(value);
  if (Array.isArray(value)) return value.every(storable);
  if (typeof value === 'object' && value !== null) return Object.entries(value).every(([k, v]) => storableString(k) && storable(v));
  return true;
}

describe('Stripe-Signature', () => {
  test('is accepted only with a fresh timestamp and a v1 by a configured secret, however many decoys surround it', async () => {
    const stamp = fc.oneof(
      // 30 s either side of the 300 s tolerance, so that a slow machine cannot move a case across it.
      { arbitrary: fc.record({ skew: fc.integer({ min: -270, max: 270 }) }), weight: 3 },
      fc.record({
        skew: fc.oneof(fc.integer({ min: 330, max: 2 ** 31 - 1 }), fc.integer({ min: -(2 ** 31), max: -330 }), fc.constantFrom(10 ** 12, 10 ** 14)),
      }),
      // Not a number to parseInt: Stripe's verifier would sign over "NaN." and skip its age check.
      fc
        .record({ text: fc.oneof(fc.constantFrom('', 'abc', 'NaN', 'Infinity', '-', '+', ' ', 'now'), fc.string({ unit: headerUnit, maxLength: 20 })) })
        .filter(({ text }) => Number.isNaN(Number.parseInt(text, 10)) && !/[,=]/.test(text)),
    );
    // Never a second `t` (Stripe's parser reads the last one) and never an empty v1 (Stripe's
    // verifier throws on it and refuses the whole header: safe, and not what this is about).
    const decoy = fc.oneof(
      hex64.map((h) => `v1=${h}`),
      fc
        .string({ unit: headerUnit, minLength: 1, maxLength: 60 })
        .filter((s) => !/[,=]/.test(s))
        .map((s) => `v1=${s}`),
      hex64.map((h) => `v0=${h}`),
      fc.string({ unit: headerUnit, maxLength: 30 }).filter((s) => !s.includes(',') && !['t', 'v1'].includes(s.split('=')[0]!)),
    );
    const signature = fc.record({
      stamp,
      secret: fc.constantFrom('current', 'previous', 'unknown'),
      withValid: fc.boolean(),
      // A few, or hundreds of v1= entries within Node's 16 KB header limit (huge headers are below).
      decoys: fc.oneof(fc.array(decoy, { maxLength: 8 }), fc.array(decoy, { minLength: 150, maxLength: 200 })),
      position: fc.nat(),
    });
    const secrets = { current: WEBHOOK_SECRET, previous: PREVIOUS_WEBHOOK_SECRET, unknown: 'whsec_someone_else_0123456789' };
    await check(
      fc.asyncProperty(signature, async ({ stamp, secret, withValid, decoys, position }) => {
        const body = Buffer.from(JSON.stringify(freshEvent()));
        const t = 'skew' in stamp ? String(now() + stamp.skew) : stamp.text;
        const items = [...decoys];
        if (withValid) items.splice(position % (items.length + 1), 0, `v1=${hmac(secrets[secret], 'skew' in stamp ? t : 'NaN', body)}`);
        const fresh = 'skew' in stamp && Math.abs(stamp.skew) <= 270;
        const outcome = await judge.deliver(body, { 'stripe-signature': [`t=${t}`, ...items].join(',') });
        assert.equal(verdict(outcome), withValid && secret !== 'unknown' && fresh ? 'accepted' : 'rejected');
      }),
      150,
    );
  });

  test('missing or any garbage string is rejected', async () => {
    const header = fc.option(fc.oneof(fc.string({ unit: headerUnit, maxLength: 60 }), fc.string({ unit: headerUnit, minLength: 1000, maxLength: 8000 })), {
      nil: undefined,
    });
    await check(
      fc.asyncProperty(header, async (value) => {
        const body = Buffer.from(JSON.stringify(freshEvent()));
        assert.equal(await judge.deliver(body, value === undefined ? {} : { 'stripe-signature': value }), 'rejected');
      }),
      100,
    );
  });
});

describe('a body under a valid signature', () => {
  const invalidUtf8 = fc.constantFrom(
    [0xff],
    [0xfe],
    [0x80],
    [0xc0, 0x80],
    [0xe2, 0x82],
    [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0xf8, 0x88, 0x80, 0x80, 0x80],
  );

  test('that is not UTF-8 is rejected, signed over its bytes or over a lossy decoding of them', async () => {
    const body = fc.oneof(
      // An event with bad bytes inside a string value.
      fc
        .array(
          fc.oneof(
            invalidUtf8,
            fc.array(
              fc.integer({ min: 0x20, max: 0x7e }).filter((c) => c !== 0x22 && c !== 0x5c),
              { maxLength: 8 },
            ),
          ),
          { maxLength: 6 },
        )
        .chain((parts) =>
          invalidUtf8.map((bad) => {
            const [head, tail] = JSON.stringify(freshEvent()).split('"description":');
            return Buffer.concat([
              Buffer.from(`${head}"description":"`),
              Buffer.from([...bad, ...parts.flat()]),
              Buffer.from(`",${tail!.replace(/^[^,]*,/, '')}`),
            ]);
          }),
        ),
      fc.tuple(fc.uint8Array({ maxLength: 2000 }), invalidUtf8).map(([bytes, bad]) => Buffer.concat([Buffer.from(bytes), Buffer.from(bad)])),
    );
    await check(
      fc.asyncProperty(body, fc.boolean(), async (bytes, overBytes) => {
        // Over the bytes, it is verified and then refused as text; over a decoding with U+FFFD
        // replacements (what Stripe's SDK would hash), its signature fails.
        const payload = overBytes ? bytes : Buffer.from(new TextDecoder().decode(bytes));
        assert.equal(await judge.deliver(bytes, { 'stripe-signature': signed(payload) }), 'rejected');
      }),
      60,
    );
  });

  test('that is not JSON, or JSON that is not an event, is rejected', async () => {
    const text = fc.oneof(
      fc.string({ unit: anyUnit, maxLength: 500 }),
      fc.nat().map((cut) => {
        const event = JSON.stringify(freshEvent());
        return event.slice(0, cut % event.length);
      }),
      fc.jsonValue({ stringUnit: anyUnit, maxDepth: 5 }).map((value) => JSON.stringify(value)),
    );
    await check(
      fc.asyncProperty(text, async (value) => {
        // Sign what goes over the wire (fetch sends a lone surrogate as U+FFFD).
        const body = Buffer.from(value);
        assert.equal(await judge.deliver(body, { 'stripe-signature': signed(body) }), 'rejected');
      }),
      100,
    );
  });

  test('that is an event with any of its fields replaced by arbitrary JSON is stored whole or not at all', async () => {
    const field = fc.constantFrom('id', 'object', 'type', 'created', 'livemode', 'data', 'api_version', 'request');
    const overrides = fc.dictionary(field, fc.jsonValue({ stringUnit: anyUnit, maxDepth: 4 }), { maxKeys: 3 });
    await check(
      fc.asyncProperty(overrides, async (replaced) => {
        const body = Buffer.from(JSON.stringify({ ...freshEvent(), ...replaced }));
        await judge.deliver(body, { 'stripe-signature': signed(body) });
      }),
      100,
    );
  });

  test('that is an event with odd ids, types, timestamps and objects is accepted exactly when the contract says', async () => {
    const objectId: fc.Arbitrary<{ id?: unknown }> = fc.oneof(
      { arbitrary: oddString.map((id) => ({ id })), weight: 4 },
      fc.constant({}), // no id at all: invoice.upcoming and friends
      fc
        .jsonValue({ maxDepth: 1 })
        .filter((v) => typeof v !== 'string')
        .map((id) => ({ id })),
    );
    const event = fc.record({
      id: oddString,
      type: oddString,
      created: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 2 ** 31 - 1 }), weight: 4 },
        fc.constantFrom(-1, 0.5, 253_402_300_799, 253_402_300_800, Number.MAX_SAFE_INTEGER, 1e300, '1700000000'),
        fc.double(),
      ),
      livemode: fc.oneof({ arbitrary: fc.boolean(), weight: 4 }, fc.jsonValue({ maxDepth: 1 })),
      object: fc.tuple(
        objectId,
        fc.dictionary(fc.string({ unit: anyUnit, maxLength: 10 }), fc.jsonValue({ stringUnit: anyUnit, maxDepth: 3 }), { maxKeys: 4 }),
      ),
    });
    let accepted = 0;
    await check(
      fc.asyncProperty(event, async ({ id, type, created, livemode, object: [withId, rest] }) => {
        const payload = { ...freshEvent(), id, type, created, livemode, data: { object: { ...rest, object: 'charge', ...withId } } };
        const body = Buffer.from(JSON.stringify(payload));
        const objectId = typeof withId.id === 'string' ? withId.id : null;
        const objectIdOk = objectId === null || (objectId.length >= 1 && objectId.length <= 255);
        const createdOk = Number.isSafeInteger(created) && (created as number) >= 0 && (created as number) <= 253_402_300_799;
        const valid = isId(id) && isId(type) && createdOk && typeof livemode === 'boolean' && objectIdOk && storable(payload);
        const outcome = await judge.deliver(body, { 'stripe-signature': signed(body) });
        assert.equal(verdict(outcome), valid ? 'accepted' : 'rejected');
        if (outcome !== 'accepted') return;
        accepted++;
        const row = await database.db.selectFrom('stripe_events').selectAll().where('event_id', '=', id).executeTakeFirstOrThrow();
        assert.deepEqual([row.type, row.object_id, row.livemode, row.stripe_created_at.getTime()], [type, objectId, livemode, (created as number) * 1000]);
      }),
      250,
    );
    // The property is only worth something if both sides were exercised.
    assert.ok(accepted > 20, `only ${accepted} runs were accepted`);
  });
});

describe('size', () => {
  /** A valid signed event of exactly `size` bytes (its description is the padding). */
  function eventOfSize(size: number): Buffer {
    const event = freshEvent();
    const bare = JSON.stringify({ ...event, data: { object: { ...event.data.object, description: '' } } });
    return Buffer.from(JSON.stringify({ ...event, data: { object: { ...event.data.object, description: 'x'.repeat(size - bare.length) } } }));
  }
  const chunked = (body: Buffer) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < body.length; at += 64 * 1024) controller.enqueue(body.subarray(at, at + 64 * 1024));
        controller.close();
      },
    });

  test('1 MiB is accepted; anything over is 413, with or without Content-Length, and stores nothing', async () => {
    const exact = eventOfSize(MiB);
    assert.equal(await judge.deliver(exact, { 'stripe-signature': signed(exact) }), 'accepted');
    await check(
      fc.asyncProperty(fc.integer({ min: MiB + 1, max: 5 * MiB }), fc.boolean(), async (size, withLength) => {
        const body = eventOfSize(size);
        const headers = { 'content-type': 'application/json', 'stripe-signature': signed(body) };
        const before = await judge.counts();
        const response = withLength
          ? await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body, headers })
          : await fetch(`${service.url}/webhooks/stripe`, { method: 'POST', body: chunked(body), headers, duplex: 'half' });
        assert.deepEqual([response.status, await response.json()], [413, { error: 'request body too large: the limit is 1 MiB' }]);
        assert.deepEqual(await judge.counts(), before);
      }),
      8,
    );
  });

  test('an endless chunked body is answered 413 while it is still being sent, without being read to the end', async () => {
    const { hostname, port } = new URL(service.url);
    const tooLargeAnswers = async () => {
      const metrics = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${service.config.metricsToken}` } });
      return Number(/stripe_inbox_webhook_requests_total\{outcome="too_large"\} (\d+)/.exec(await metrics.text())?.[1]);
    };
    const answeredBefore = await tooLargeAnswers();
    const giveUpAfter = 256 * MiB;
    let written = 0;
    const status = await new Promise<number | string>((resolve) => {
      const request = http.request({
        host: hostname,
        port,
        path: '/webhooks/stripe',
        method: 'POST',
        headers: { 'transfer-encoding': 'chunked', 'stripe-signature': signed(Buffer.alloc(0)) },
      });
      let answered = false;
      request.on('response', (response) => {
        answered = true;
        response.resume();
        resolve(response.statusCode ?? 'no status');
      });
      request.on('error', (error) => resolve(answered ? 'answered' : `error before any answer: ${error.message}`));
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (!answered && written < giveUpAfter) {
          written += chunk.length;
          if (!request.write(chunk)) return void request.once('drain', pump);
        }
        if (!answered) resolve(`no answer after ${written} bytes`);
      };
      pump();
    });
    // The connection is closed behind the 413 while the client is still sending, so the client's
    // next write can meet the reset before Node has parsed the answer (EPIPE, ECONNRESET): the
    // server's own count of its 413 answers says what it answered either way.
    if (typeof status !== 'string' || !/EPIPE|ECONNRESET/.test(status)) assert.equal(status, 413);
    assert.equal(await tooLargeAnswers(), answeredBefore + 1, `answered once with 413 (the client saw: ${status})`);
    // The server stopped reading at the limit; what was written beyond it sits in socket buffers.
    assert.ok(written < 64 * MiB, `${written} bytes were written before the answer came`);
  });

  test('a client that goes away in the middle of its body leaves nothing behind', async () => {
    const { hostname, port } = new URL(service.url);
    const before = await judge.counts();
    for (const length of [1000, MiB]) {
      await new Promise<void>((resolve) => {
        const request = http.request({
          host: hostname,
          port,
          path: '/webhooks/stripe',
          method: 'POST',
          headers: { 'content-length': length, 'stripe-signature': 't=1,v1=0' },
        });
        request.on('error', () => resolve());
        request.write(Buffer.alloc(length / 2, 'x'), () => setTimeout(() => request.destroy(), 20));
      });
    }
    assert.deepEqual(await judge.counts(), before);
  });

  test('a compressed body is 415 (it would dodge the limit until inflated)', async () => {
    for (const encoding of ['gzip', 'deflate', 'br', 'zstd', 'identity, gzip', 'x-unknown']) {
      const body = Buffer.from(JSON.stringify(freshEvent()));
      assert.equal(await judge.deliver(body, { 'content-encoding': encoding, 'stripe-signature': signed(body) }), 'rejected', encoding);
    }
  });
});

describe('huge headers', () => {
  test('are refused by Node with 431 past 16 KB (and judged as usual below), and the process stays up', async () => {
    const shape = fc.record({ total: fc.integer({ min: 1024, max: 96 * 1024 }), split: fc.boolean(), intoSignature: fc.boolean() });
    await check(
      fc.asyncProperty(shape, async ({ total, split, intoSignature }) => {
        const pad = 'v1=' + 'a'.repeat(total);
        const headers: Record<string, string> = split
          ? Object.fromEntries(Array.from({ length: Math.ceil(total / 1000) }, (_, i) => [`x-pad-${i}`, 'a'.repeat(1000)]))
          : intoSignature
            ? { 'stripe-signature': `t=${now()},${pad}` }
            : { 'x-pad': pad };
        const body = Buffer.from(JSON.stringify(freshEvent()));
        const before = await judge.counts();
        const response = await fetch(`${service.url}/webhooks/stripe`, {
          method: 'POST',
          body,
          headers: { 'stripe-signature': `t=${now()},v1=0`, ...headers },
        });
        const text = await response.text();
        if (total > 17 * 1024) assert.equal(response.status, 431, text);
        else if (total < 15 * 1024) assert.equal(response.status, 400, text);
        else assert.ok([400, 431].includes(response.status), `${response.status} ${text}`);
        if (response.status === 400) assert.ok(REJECTIONS.has((JSON.parse(text) as { error: string }).error), text);
        assert.deepEqual(await judge.counts(), before);
      }),
      20,
    );
  });
});
