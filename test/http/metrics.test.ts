// GET /metrics: Prometheus text behind a bearer token, webhook outcomes counted by a bounded set
// of labels, and the database gauges and worker histograms an alert would use.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { invoiceObject } from '../../src/modules/billing/sample-events.js';
import { sampleEvent, signDelivery } from '../../src/stripe/sample-events.js';

import { finishedEvent, givenOrder, paidEvent, waitingEvent } from '../support/factories.js';
import { ADMIN_TOKEN, API_TOKEN, serviceForFile } from '../support/service.js';
import { subscribedThroughApi } from '../support/subscriptions.js';

const file = serviceForFile();

async function scrape(token: string | null = ADMIN_TOKEN): Promise<{ status: number; text: string }> {
  const response = await fetch(`${file.service.url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: response.status, text: await response.text() };
}

const sample = (text: string, metric: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${metric} `));
  return line === undefined ? undefined : Number(line.slice(metric.length + 1));
};

test('metrics need the admin (or metrics) token', async () => {
  assert.equal((await scrape(null)).status, 401);
  assert.equal((await scrape(API_TOKEN)).status, 401);
  assert.equal((await scrape()).status, 200);
});

test('webhook outcomes, event statuses and fulfilment latency are counted', async () => {
  const event = paidEvent(await givenOrder(file.database));
  await file.service.deliver(event);
  await file.service.deliver(event);
  const forged = signDelivery(event, 'whsec_forged');
  await fetch(`${file.service.url}/webhooks/stripe`, { method: 'POST', body: forged.body, headers: forged.headers });
  await finishedEvent(file.database, event.id);

  const { text } = await scrape();
  assert.equal(sample(text, 'stripe_inbox_webhook_requests_total{outcome="accepted"}'), 1);
  assert.equal(sample(text, 'stripe_inbox_webhook_requests_total{outcome="duplicate"}'), 1);
  assert.equal(sample(text, 'stripe_inbox_webhook_requests_total{outcome="bad_signature"}'), 1);
  assert.equal(sample(text, 'stripe_inbox_webhook_requests_total{outcome="unavailable"}'), 0);
  assert.equal(sample(text, 'stripe_inbox_events{status="processed"}'), 1);
  assert.equal(sample(text, 'stripe_inbox_oldest_processing_age_seconds'), 0);
  assert.equal(sample(text, 'stripe_inbox_events_finished_total{type="checkout.session.completed",status="processed"}'), 1);
  assert.equal(sample(text, 'stripe_inbox_event_received_to_finished_seconds_count{type="checkout.session.completed"}'), 1);
  assert.ok(text.includes('stripe_inbox_process_resident_memory_bytes'), 'process metrics are there');
  assert.ok(!text.includes(event.id), 'no event id in any label');
});

test('an event that waits for what it needs (an invoice before its checkout) counts as a wait, not a handler failure', async () => {
  const subscription = await subscribedThroughApi(file);
  const invoice = sampleEvent('invoice.paid', invoiceObject(subscription, { billingReason: 'subscription_create', status: 'paid' }));
  assert.equal((await file.service.deliver(invoice)).status, 200);
  await waitingEvent(file.database, invoice.id);

  const { text } = await scrape();
  assert.equal(sample(text, 'stripe_inbox_event_waits_total{type="invoice.paid"}'), 1);
  assert.equal(sample(text, 'stripe_inbox_handler_failures_total{type="invoice.paid",retry="yes"}'), undefined);
});
