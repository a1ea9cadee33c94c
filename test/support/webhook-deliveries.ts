// Signing and judging webhook deliveries for the hostile-input tests: sign bytes the way Stripe
// does, post them, and check the property every answer must have: a 200 that stored exactly the
// event sent with its job, or a 4xx {"error"} with one of a fixed set of messages and nothing
// stored.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { exampleObject, sampleEvent, type SampleEvent } from '../../src/stripe/sample-events.js';
import type { TestDatabase } from './database.js';
import { WEBHOOK_SECRET } from './service.js';

/** Every message a rejected delivery may carry, collected from src/ (nothing else may appear). */
export const REJECTIONS: ReadonlySet<string> = new Set([
  'missing Stripe-Signature header',
  'invalid Stripe-Signature: check STRIPE_WEBHOOK_SECRET and the server clock',
  'malformed event: body is not UTF-8 JSON',
  'malformed event: object is missing or invalid (expected "event" or "v2.core.event")',
  ...[
    'body',
    'id',
    'type',
    'created',
    'livemode',
    'data',
    'data.object',
    'data.object.id',
    'related_object',
    'related_object.id',
    'related_object.type',
    'related_object.url',
    'snapshot_event',
  ].map((p) => `malformed event: ${p} is missing or invalid`),
  'malformed event: contains a NUL character',
  'malformed event: contains an unpaired UTF-16 surrogate',
  'malformed event: a number is out of range',
  'malformed event: nested too deeply',
  'request body too large: the limit is 1 MiB',
  'compressed request bodies are not accepted',
]);

export const now = () => Math.floor(Date.now() / 1000);
export const hmac = (secret: string, timestamp: string, payload: Buffer) => createHmac('sha256', secret).update(`${timestamp}.`).update(payload).digest('hex');
/** The Stripe-Signature Stripe would send for these bytes now. */
export const signed = (payload: Buffer, secret = WEBHOOK_SECRET) => `t=${now()},v1=${hmac(secret, String(now()), payload)}`;
/** A valid event with a fresh id: only what a test spoils can make it fail. */
export const freshEvent = (): SampleEvent => sampleEvent('charge.succeeded', exampleObject('charge'));

export interface Counts {
  events: number;
  jobs: number;
}

export type Outcome = 'accepted' | 'duplicate' | 'rejected';
/** A repeated id (generators do repeat themselves) is a duplicate: accepted, nothing added. */
export const verdict = (outcome: Outcome) => (outcome === 'rejected' ? 'rejected' : 'accepted');

export interface WebhookJudge {
  counts(): Promise<Counts>;
  /** Posts one delivery, checks the property every answer must have, and says which it was. */
  deliver(body: Buffer, headers: Record<string, string>): Promise<Outcome>;
}

export function webhookJudge(database: TestDatabase, serviceUrl: string): WebhookJudge {
  const counts = async (): Promise<Counts> => {
    const { rows } = await sql<Counts>`
      select (select count(*)::int from stripe_events) as events, (select count(*)::int from graphile_worker.jobs) as jobs`.execute(database.db);
    return rows[0]!;
  };

  const deliver = async (body: Buffer, headers: Record<string, string>): Promise<Outcome> => {
    const before = await counts();
    const response = await fetch(`${serviceUrl}/webhooks/stripe`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const text = await response.text();
    const after = await counts();
    let answer: Record<string, unknown>;
    try {
      answer = JSON.parse(text) as Record<string, unknown>;
    } catch {
      assert.fail(`${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    if (response.status === 200) {
      const eventId = sentId(body);
      assert.ok(eventId !== undefined, `200 for a body without an event id: ${text}`);
      // Stored, and either waiting for its job or finished by its claim (a type nothing acts on:
      // src/fulfilment/finish-at-intake.ts).
      const { rows } = await sql<{ waiting: boolean; job: boolean }>`
        select e.status = 'processing' as waiting, exists (select from graphile_worker.jobs j where j.key = e.job_key) as job
        from stripe_events e where e.event_id = ${eventId}`.execute(database.db);
      const row = rows[0];
      assert.ok(row !== undefined && row.job === row.waiting, 'accepted, but the event is not stored, or waits without its job');
      const duplicate = answer.duplicate === true;
      assert.deepEqual(answer, duplicate ? { received: true, duplicate: true } : { received: true });
      assert.deepEqual(after, duplicate ? before : { events: before.events + 1, jobs: before.jobs + (row.waiting ? 1 : 0) });
      return duplicate ? 'duplicate' : 'accepted';
    }
    assert.ok([400, 413, 415].includes(response.status), `unexpected status ${response.status}: ${text.slice(0, 200)}`);
    assert.deepEqual(Object.keys(answer), ['error'], text);
    assert.ok(REJECTIONS.has(answer.error as string), `not one of the fixed messages: ${text.slice(0, 200)}`);
    assert.deepEqual(after, before, `rejected (${text}) but something was stored`);
    return 'rejected';
  };

  return { counts, deliver };
}

/** The id a body names, if it is JSON with a string id. */
function sentId(body: Buffer): string | undefined {
  try {
    const id = (JSON.parse(body.toString('utf8')) as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}
