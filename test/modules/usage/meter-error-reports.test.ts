// Stripe's asynchronous refusal of meter events it accepted: the thin notification is claimed like
// any event, the worker fetches its data, and the reports Stripe names end failed with its code;
// those beyond Stripe's samples are counted in the event's outcome.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { exampleObject, randomStripeId } from '../../../src/stripe/sample-events.js';
import { finishedEvent } from '../../support/factories.js';
import { meteredAccount } from '../../support/metered.js';
import { serviceForFile } from '../../support/service.js';
import { waitFor } from '../../support/wait-for.js';

const file = serviceForFile();

const reportOf = async (usageId: string) =>
  (await sql<{ status: string; last_error: string | null }>`select status, last_error from usage_reports where usage_id = ${usageId}`.execute(file.database.db))
    .rows[0]!;

/** Stripe's example error report, naming `identifiers` as its samples among `count` refused events; and its thin notification. */
function errorReport(type: string, meterId: string, identifiers: string[], count: number) {
  const example = exampleObject('v2.core.event');
  const related = { id: meterId, type: 'billing.meter', url: `/v1/billing/meters/${meterId}` };
  const full = {
    ...example,
    id: randomStripeId('evt'),
    type,
    created: new Date().toISOString(),
    related_object: related,
    data: {
      ...(example.data as Record<string, unknown>),
      reason: {
        error_count: count,
        error_types: [
          {
            code: 'meter_event_customer_not_found',
            error_count: count,
            sample_errors: identifiers.map((identifier) => ({ error_message: 'Customer not found.', request: { identifier } })),
          },
        ],
      },
    },
  };
  // What a thin destination delivers: the event without its data.
  const thin = Object.fromEntries(Object.entries(full).filter(([key]) => key !== 'data')) as Omit<typeof full, 'data'>;
  return { full, thin };
}

test('an error report marks the reports Stripe names failed, with its code, and counts those it does not name', async () => {
  const account = await meteredAccount(file);
  const reply = await file.service.call('POST', `/api/accounts/${account.accountId}/runs`, {
    body: { quantity: 3 },
    headers: { 'idempotency-key': `key-${randomUUID()}` },
  });
  const usageId = reply.body.usage_id as string;
  await waitFor('the worker to report the run', async () => (await reportOf(usageId)).status === 'sent');

  const { full, thin } = errorReport('v1.billing.meter.error_report_triggered', randomStripeId('mtr'), [usageId, randomUUID()], 4);
  file.service.stripe.addThinEvent(full);
  assert.equal((await file.service.deliver(thin)).status, 200);
  const row = await finishedEvent(file.database, thin.id);
  assert.equal(row.status, 'processed', row.last_error ?? '');
  assert.match(row.last_error ?? '', /^1 usage report\(s\) marked failed; 2 more refused event\(s\) are not named by Stripe's samples/);
  const report = await reportOf(usageId);
  assert.equal(report.status, 'failed');
  assert.match(report.last_error!, /meter_event_customer_not_found/);
  assert.match(report.last_error!, new RegExp(thin.id));
});

test('a no-meter report naming none of ours ends ignored, saying so', async () => {
  const { full, thin } = errorReport('v1.billing.meter.no_meter_found', randomStripeId('mtr'), [randomUUID()], 1);
  file.service.stripe.addThinEvent(full);
  assert.equal((await file.service.deliver(thin)).status, 200);
  const row = await finishedEvent(file.database, thin.id);
  assert.equal(row.status, 'ignored');
  assert.match(row.last_error ?? '', /names no report of ours/);
});
