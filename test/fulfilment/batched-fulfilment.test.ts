// A job carries the events claimed together (src/queue/job-queue.ts) and fulfils them in one
// transaction, and a batch never changes an outcome: a poison event fails alone with one attempt
// while the rest of its job is fulfilled; an event that fails transiently is the only one left in
// the job for graphile-worker's retry; two Event objects for one order in one batch grant once;
// one event twice in a batch is fulfilled once, and a job that comes after its events finished
// changes nothing; the payments of several orders of one account,
// recorded by one statement, add up; jobs that run at once share a transaction, and a poison event
// among them still fails alone. Jobs run through the real task with
// graphile-worker's runOnce; no service runs on this database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runOnce } from 'graphile-worker';
import { sql } from 'kysely';
import { processStripeEventsTask } from '../../tasks/process_stripe_event.js';
import { claimEvents } from '../../src/events/event-store.js';
import { refundedCharge, sampleEvent } from '../../src/stripe/sample-events.js';
import { fulfilEvents } from '../../src/fulfilment/fulfil-event.js';
import { FulfilmentBatcher } from '../../src/fulfilment/fulfilment-batcher.js';
import { sweepStaleEvents } from '../../src/maintenance/sweep.js';
import { serviceDispatch } from '../support/handlers.js';
import { createLogger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { graphileLogger } from '../../src/queue/graphile-logger.js';
import { databaseForFile } from '../support/database.js';
import { eventRow, givenOrder, grantsOf, incomingEvent, paidEvent, quotaOf } from '../support/factories.js';
import { deleteJobs, fulfilmentJobs, holdJobs } from '../support/jobs.js';
import { waitFor } from '../support/wait-for.js';

const options = { maxAttempts: 3, dispatch: serviceDispatch(), maxJobs: 4 };
const database = databaseForFile({ maxConnections: 6 });

/** Runs the jobs that are due, once, through the real task, and waits until graphile-worker has settled them. */
async function runJobs(maxAttempts = options.maxAttempts): Promise<void> {
  const logger = createLogger('silent');
  const task = processStripeEventsTask({
    fulfilment: new FulfilmentBatcher(database.db, { ...options, maxAttempts }),
    logger,
    metrics: new Metrics(database.db),
  });
  await runOnce({ pgPool: database.pool, taskList: { process_stripe_event: task }, logger: graphileLogger(logger), noHandleSignals: true });
  // runOnce can resolve before the completion or failure of the last job it ran has committed
  // (graphile-worker does not await them): a job is settled once it is deleted or unlocked.
  await waitFor('graphile-worker to settle the jobs it ran', async () => (await fulfilmentJobs(database.db)).every((job) => job.locked_at === null));
}

test("an event that waits leaves no job behind, spends no attempt, and ends 'ignored' when its wait gives up", async () => {
  // A refund of a payment no module knows, with a customer (it may pay an invoice of ours): billing waits, and may wait forever.
  const refund = sampleEvent('charge.refunded', {
    ...refundedCharge({ paymentIntentId: 'pi_never_ours', amount: 4900, currency: 'chf', amountRefunded: 4900 }),
    customer: 'cus_test_never_ours',
  });
  await claimEvents(database.db, [incomingEvent(refund)], { maxAttempts: 1 });

  await runJobs(1);
  const parked = await eventRow(database, refund.id);
  assert.deepEqual([parked.status, parked.attempts], ['processing', 0]);
  assert.deepEqual(await fulfilmentJobs(database.db), [], 'parked, not kept for a retry');
  // Not abandoned: the sweep leaves a waiting event alone, however old.
  await sql`update stripe_events set enqueued_at = now() - interval '1 day' where event_id = ${refund.id}`.execute(database.db);
  assert.equal((await sweepStaleEvents(database.db, { staleAfterMs: 1_000, maxAttempts: 1 })).reclaimed, 0);

  // WAIT_HOURS later: the sweep runs it once more, and it ends.
  await sql`update stripe_events set wait_until = now() - interval '1 second' where event_id = ${refund.id}`.execute(database.db);
  assert.equal((await sweepStaleEvents(database.db, { staleAfterMs: 1_000, maxAttempts: 1 })).waits_expired, 1);
  await runJobs(1);
  const row = await eventRow(database, refund.id);
  assert.deepEqual([row.status, row.attempts], ['ignored', 0]);
  assert.match(row.last_error ?? '', /^gave up waiting after \d+ h: /);
  assert.deepEqual(await fulfilmentJobs(database.db), []);
});

test('a job with a poison event: the others are fulfilled, the poison event fails alone with one attempt', async () => {
  const orders = await Promise.all(Array.from({ length: 4 }, () => givenOrder(database)));
  const events = orders.map((order, i) => paidEvent(order, i === 2 ? { amount: order.amount + 1 } : {}));
  await claimEvents(database.db, events.map(incomingEvent), options);
  assert.deepEqual(
    (await fulfilmentJobs(database.db)).map((job) => job.event_ids),
    [events.map((e) => e.id).sort()],
    'claimed together, one job',
  );

  await runJobs();

  for (const [i, event] of events.entries()) {
    const row = await eventRow(database, event.id);
    const order = orders[i]!;
    if (i === 2) {
      assert.deepEqual([row.status, row.attempts], ['failed', 1], 'the rolled-back batch did not count an attempt');
      assert.match(row.last_error ?? '', /amount or currency mismatch/);
      assert.deepEqual(await grantsOf(database, order.order_id), []);
    } else {
      assert.deepEqual([row.status, row.attempts], ['processed', 0]);
      assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
      assert.equal((await quotaOf(database, order.account_id)).granted, order.credits);
    }
  }
  assert.deepEqual(await fulfilmentJobs(database.db), [], 'a dead letter is not retried: the job is done');
});

test('a transient failure in a job: the others are fulfilled, only the failing event stays queued for the retry', async () => {
  const orders = await Promise.all(Array.from({ length: 3 }, () => givenOrder(database)));
  const events = orders.map((order) => paidEvent(order));
  const flaky = orders[1]!;
  // A real Postgres error inside the fulfilment transaction, for one order only.
  await sql`
    create function refuse_grant() returns trigger language plpgsql as $$
    begin if new.order_id = ${sql.lit(flaky.order_id)} then raise exception 'credit ledger unavailable (test trigger)'; end if; return new; end $$`.execute(
    database.db,
  );
  await sql`create trigger refuse_grant before insert on credit_grants for each row execute function refuse_grant()`.execute(database.db);
  try {
    await claimEvents(database.db, events.map(incomingEvent), options);
    await runJobs();
  } finally {
    await sql`drop trigger refuse_grant on credit_grants; drop function refuse_grant()`.execute(database.db);
  }

  assert.deepEqual(await Promise.all(events.map(async (e) => [(await eventRow(database, e.id)).status, (await eventRow(database, e.id)).attempts])), [
    ['processed', 0],
    ['processing', 1],
    ['processed', 0],
  ]);
  assert.deepEqual(await grantsOf(database, flaky.order_id), []);
  const [job, ...others] = await fulfilmentJobs(database.db);
  assert.deepEqual(others, []);
  assert.equal(job!.attempts, 1);
  // Postgres's clock on both sides: graphile-worker puts a first failure e^1 s past its failure.
  assert.ok(job!.run_at.getTime() - job!.created_at.getTime() >= 2_000, "in graphile-worker's backoff");
  assert.match(job!.last_error ?? '', /credit ledger unavailable/);
  // What the retry carries: made due now and taken by a worker that reports its payload.
  await sql`select graphile_worker.reschedule_jobs(array[${job!.id}]::bigint[], run_at => now())`.execute(database.db);
  const retry = await holdJobs(database, 1);
  await retry.release();
  assert.deepEqual(
    retry.jobs.map((j) => j.eventIds),
    [[events[1]!.id]],
    'the job keeps only the event to retry',
  );
});

test('in one batch, two Event objects for one order grant once, and one event twice is fulfilled once', async () => {
  const order = await givenOrder(database);
  const other = await givenOrder(database);
  const first = paidEvent(order);
  const second = paidEvent(order, { sessionId: first.data.object.id as string });
  const single = paidEvent(other);
  await claimEvents(database.db, [first, second, single].map(incomingEvent), options);

  // As a job would: the same id twice happens when a replay's job and the claim's run together.
  const results = await fulfilEvents(database.db, [first.id, second.id, single.id, single.id, 'evt_not_stored'], options);

  assert.deepEqual(
    results.map((r) => r.status),
    ['processed', 'duplicate', 'processed', 'already_finished', 'missing'],
  );
  assert.equal((await eventRow(database, second.id)).duplicate_of, first.id);
  assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: first.id, credits: order.credits }]);
  assert.equal((await quotaOf(database, order.account_id)).granted, order.credits);
  assert.equal((await quotaOf(database, other.account_id)).granted, other.credits);
  await deleteJobs(database.db);
});

test('a job that comes after the events finished changes nothing: their rows keep their outcome', async () => {
  const order = await givenOrder(database);
  const paid = paidEvent(order);
  const again = paidEvent(order, { sessionId: paid.data.object.id as string });
  await claimEvents(database.db, [paid, again].map(incomingEvent), options);
  await fulfilEvents(database.db, [paid.id, again.id], options);
  const before = await Promise.all([paid.id, again.id].map((id) => eventRow(database, id)));

  // A replay's job, or a reclaimed job whose first run committed late, with both events in it.
  const results = await fulfilEvents(database.db, [paid.id, again.id], options);

  assert.deepEqual(
    results.map((r) => r.status),
    ['already_finished', 'already_finished'],
  );
  assert.deepEqual(await Promise.all([paid.id, again.id].map((id) => eventRow(database, id))), before);
  assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: paid.id, credits: order.credits }]);
  await deleteJobs(database.db);
});

test('one job paying three orders of one account, and one order paid before: each granted once, the balance their sum', async () => {
  const accountId = `acct_batch_${Date.now()}`;
  const orders = await Promise.all(Array.from({ length: 4 }, () => givenOrder(database, { accountId })));
  const earlier = paidEvent(orders[3]!);
  await claimEvents(database.db, [incomingEvent(earlier)], options);
  await runJobs();
  // A second Event object for the order paid before, in the same job as the three new payments.
  const again = paidEvent(orders[3]!, { sessionId: earlier.data.object.id as string });
  const events = [...orders.slice(0, 3).map((order) => paidEvent(order)), again];
  await claimEvents(database.db, events.map(incomingEvent), options);
  await runJobs();

  assert.deepEqual(await Promise.all(events.map(async (e) => (await eventRow(database, e.id)).status)), ['processed', 'processed', 'processed', 'duplicate']);
  assert.equal((await eventRow(database, again.id)).duplicate_of, earlier.id);
  for (const [i, order] of orders.entries()) {
    assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: i === 3 ? earlier.id : events[i]!.id, credits: order.credits }]);
  }
  assert.equal(
    (await quotaOf(database, accountId)).granted,
    orders.reduce((sum, order) => sum + order.credits, 0),
  );
});

test('jobs running at once share a transaction; a poison event among them fails alone, a retried job runs on its own', async () => {
  const orders = await Promise.all(Array.from({ length: 10 }, () => givenOrder(database)));
  const events = orders.map((order, i) => paidEvent(order, i === 7 ? { currency: 'usd' } : {}));
  // Five claims, so five jobs of two events, as five bursts of deliveries would leave them.
  const jobs = Array.from({ length: 5 }, (_, i) => events.slice(2 * i, 2 * i + 2));
  for (const job of jobs) await claimEvents(database.db, job.map(incomingEvent), options);
  const batcher = new FulfilmentBatcher(database.db, options);

  const results = await Promise.all(
    jobs.map((job) =>
      batcher.fulfil(
        job.map((e) => e.id),
        { retry: false },
      ),
    ),
  );

  assert.deepEqual(
    results.map((job) => job.map((r) => r.status)),
    [
      ['processed', 'processed'],
      ['processed', 'processed'],
      ['processed', 'processed'],
      ['processed', 'failed'],
      ['processed', 'processed'],
    ],
  );
  const { transactions, jobs: committed } = batcher.stats;
  assert.equal(committed, 5);
  assert.ok(transactions < 5, `five jobs at once took ${transactions} transactions`);
  for (const [i, order] of orders.entries()) {
    const row = await eventRow(database, events[i]!.id);
    if (i === 7) {
      assert.deepEqual([row.status, row.attempts], ['failed', 1]);
      assert.deepEqual(await grantsOf(database, order.order_id), []);
    } else {
      assert.deepEqual([row.status, row.attempts], ['processed', 0]);
      assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: events[i]!.id, credits: order.credits }]);
    }
  }

  const again = paidEvent(orders[0]!, { sessionId: events[0]!.data.object.id as string });
  await claimEvents(database.db, [incomingEvent(again)], options);
  assert.deepEqual(
    (await batcher.fulfil([again.id], { retry: true })).map((r) => r.status),
    ['duplicate'],
  );
  assert.deepEqual(batcher.stats, { transactions, jobs: 5 }, 'a retry does not wait for, or join, a shared transaction');
  await deleteJobs(database.db);
});

test('where claims share the process, a shared transaction starts only when giveWay lets it', async () => {
  const order = await givenOrder(database);
  const event = paidEvent(order);
  await claimEvents(database.db, [incomingEvent(event)], options);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let asked = 0;
  const batcher = new FulfilmentBatcher(database.db, { ...options, giveWay: () => (asked++, gate) });

  const result = batcher.fulfil([event.id], { retry: false });
  assert.equal(asked, 1);
  assert.equal((await eventRow(database, event.id)).status, 'processing', 'held while intake goes first');
  open();

  assert.deepEqual(
    (await result).map((r) => r.status),
    ['processed'],
  );
  assert.deepEqual(await grantsOf(database, order.order_id), [{ event_id: event.id, credits: order.credits }]);
  await deleteJobs(database.db);
});
