// sql/0017 changes stripe_events.payload from jsonb to json in one release (docs/migrations.md).
// A worker of the previous release prepared its read of the event rows while the column was jsonb,
// and Postgres refuses that statement once the type has changed. What must hold across the
// deploy: that worker's attempt leaves no effect and loses nothing, and the new release fulfils
// the event once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { runWorkerMigrations } from '../../src/queue/worker-migrations.js';
import { fulfilEvents } from '../../src/fulfilment/fulfil-event.js';
import { createLogger } from '../../src/logger.js';
import { serviceMigrations } from '../../src/modules/index.js';
import { createTestDatabase } from '../support/database.js';
import { exampleObject, randomStripeId, sampleEvent } from '../../src/stripe/sample-events.js';
import { eventRow, givenOrder, grantsOf, incomingEvent, paidEvent } from '../support/factories.js';
import { serviceDispatch } from '../support/handlers.js';

const logger = createLogger('silent');
const PAYLOAD_AS_JSON = 17;

test('a worker whose read of events was prepared while payloads were jsonb fails without effect, and the new release fulfils the event once', async () => {
  const database = await createTestDatabase({ empty: true });
  // The previous release's worker: one connection, so its prepared statements are this one's.
  const previous = openDatabase(database.url, { maxConnections: 1 });
  try {
    const migrations = await serviceMigrations();
    await migrate(
      database.pool,
      logger,
      migrations.filter((m) => m.version < PAYLOAD_AS_JSON),
      { runWorkerMigrations },
    );
    const options = { maxAttempts: 10, dispatch: serviceDispatch() };
    const order = await givenOrder(database);
    // The previous release's read is prepared by fulfilling any event; one that grants would also
    // wake what waits for its payment, with a function that release's schema does not have.
    const before = sampleEvent('payment_intent.succeeded', { ...exampleObject('payment_intent'), id: randomStripeId('pi') });
    const across = paidEvent(order);
    // As that release claimed them (today's claim also writes snapshot_claims, a later table).
    for (const event of [before, across].map(incomingEvent)) {
      await database.db
        .insertInto('stripe_events')
        .values({
          event_id: event.eventId,
          type: event.type,
          object_id: event.objectId,
          livemode: event.livemode,
          stripe_created_at: event.stripeCreatedAt,
          payload: event.rawBody.toString('utf8'),
        })
        .execute();
    }
    const [fulfilled] = await fulfilEvents(previous.db, [before.id], options);
    assert.equal(fulfilled?.status, 'processed');

    await migrate(database.pool, logger, migrations, { runWorkerMigrations });
    await assert.rejects(fulfilEvents(previous.db, [across.id], options), /cached plan must not change result type/);
    assert.deepEqual(await grantsOf(database, order.order_id), []);
    assert.deepEqual((({ status, attempts }) => ({ status, attempts }))(await eventRow(database, across.id)), { status: 'processing', attempts: 0 });

    const [after] = await fulfilEvents(database.db, [across.id], options);
    assert.equal(after?.status, 'processed');
    assert.equal((await grantsOf(database, order.order_id)).length, 1);
    assert.deepEqual(await eventRow(database, across.id).then((row) => row.payload), across);
  } finally {
    await previous.close();
    await database.close();
  }
});
