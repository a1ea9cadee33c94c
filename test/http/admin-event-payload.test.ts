// The admin API shows an event's payload as Stripe sent it, byte for byte: a number no JavaScript
// number holds (1e400, 2^64 + 1) and a repeated key would not survive a parse and a stringify.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exampleObject, sampleEvent } from '../../src/stripe/sample-events.js';
import { ADMIN_TOKEN, serviceForFile } from '../support/service.js';
import { signed } from '../support/webhook-deliveries.js';

const file = serviceForFile({ env: { ROLE: 'web' } });

/** A signed event whose text JSON.parse cannot give back, as Stripe's own indentation lays it out. */
function awkwardEvent(): { id: string; text: string } {
  const event = sampleEvent('charge.succeeded', exampleObject('charge'));
  const text = JSON.stringify(event, null, 2).replace(/\n}$/, ',\n  "huge": 1e400,\n  "wide": 18446744073709551617,\n  "twice": 1,\n  "twice": 2\n}');
  return { id: event.id, text };
}

async function deliver(text: string): Promise<void> {
  const body = Buffer.from(text);
  const response = await fetch(`${file.service.url}/webhooks/stripe`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': signed(body) },
  });
  assert.equal(response.status, 200, await response.text());
}

const admin = (path: string) => fetch(`${file.service.url}/admin/api${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

test('GET /admin/api/events/:id/payload answers the stored payload byte for byte, as JSON', async () => {
  const { id, text } = awkwardEvent();
  await deliver(text);
  const response = await admin(`/events/${id}/payload`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(await response.text(), text);
});

test('GET /admin/api/events/:id carries the same bytes as its payload', async () => {
  const { id, text } = awkwardEvent();
  await deliver(text);
  const response = await admin(`/events/${id}`);
  assert.equal(response.status, 200);
  const body = await response.text();
  assert.ok(body.includes(`"payload":${text}`), `the payload as stored, in ${body.slice(body.indexOf('"payload"'))}`);
  // Still JSON, with the rest of its members as before (only recorded: finished by its claim).
  const parsed = JSON.parse(body) as Record<string, unknown>;
  assert.deepEqual([parsed.event_id, parsed.type, parsed.status], [id, 'charge.succeeded', 'processed']);
});

test('GET /admin/api/events/:id/payload is 404 for an unknown event, 401 without the token', async () => {
  assert.equal((await admin('/events/evt_unknown/payload')).status, 404);
  assert.equal((await fetch(`${file.service.url}/admin/api/events/evt_unknown/payload`)).status, 401);
});
