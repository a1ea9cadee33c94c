// Whose account a Stripe customer is: only what a Checkout Session this service opened says (a
// package's paid order, a subscription's completed checkout), never moved; a summary of a customer
// nothing of ours names is 'ignored' at once, and one that a still open session may yet name waits
// for it, 'ignored' when the wait gives up. Handlers driven without a worker (fulfilWith).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { billingModule } from '../../../src/modules/billing/index.js';
import { creditsModule, packageCatalog } from '../../../src/modules/credits/index.js';
import { entitlementsModule } from '../../../src/modules/entitlements/index.js';
import { randomCustomerId, summaryUpdatedEvent } from '../../../src/modules/entitlements/sample-events.js';
import { withEntitlementTables } from '../../../src/modules/entitlements/tables.js';
import { withLedgerTables } from '../../../src/modules/ledger/tables.js';
import { sampleEvent } from '../../../src/stripe/sample-events.js';
import { databaseForFile } from '../../support/database.js';
import { endWait, givenOrder, paidEvent } from '../../support/factories.js';
import { fulfilWith, handlersOf } from '../../support/handlers.js';
import { checkoutCompleted, givenSubscription } from '../../support/subscriptions.js';

const database = databaseForFile();
const entitlements = handlersOf(entitlementsModule);
const billing = handlersOf(billingModule);
const credits = handlersOf(creditsModule);
const now = () => Math.floor(Date.now() / 1000);

const accountOf = (customerId: string) =>
  withLedgerTables(database.db).selectFrom('stripe_customers').select('account_id').where('customer_id', '=', customerId).executeTakeFirst();
const mirrored = (customerId: string) =>
  withEntitlementTables(database.db).selectFrom('customer_entitlements').select('lookup_key').where('customer_id', '=', customerId).execute();

// First, while no Checkout Session of ours is open in this database.
test("a summary of a customer no Checkout Session of ours names is 'ignored' at once, with the reason", async () => {
  const customerId = randomCustomerId();
  const [done] = await fulfilWith(database, entitlements, [summaryUpdatedEvent(customerId, ['dashboard'], now())]);
  assert.equal(done!.row.status, 'ignored');
  assert.equal(done!.row.last_error, `customer ${customerId} was never linked to an account: no Checkout Session this service opened names it`);
  assert.deepEqual(await mirrored(customerId), []);
});

test("a paid package order links the customer its Checkout Session names to the order's account; its summary is then applied", async () => {
  const order = await givenOrder(database);
  const customerId = randomCustomerId();
  const paid = paidEvent(order);
  const withCustomer = sampleEvent(paid.type, { ...paid.data.object, customer: customerId });
  const [granted] = await fulfilWith(database, credits, [withCustomer]);
  assert.equal(granted!.row.status, 'processed');
  assert.deepEqual(await accountOf(customerId), { account_id: order.account_id });
  const [applied] = await fulfilWith(database, entitlements, [summaryUpdatedEvent(customerId, ['export'], now())]);
  assert.equal(applied!.row.status, 'processed');
  assert.deepEqual(await mirrored(customerId), [{ lookup_key: 'export' }]);
});

test("a customer never moves: another account's checkout naming it is refused, naming both accounts", async () => {
  const first = await givenSubscription(database, { linked: false });
  const second = await givenSubscription(database, { linked: false });
  const customerId = randomCustomerId();
  const [linked] = await fulfilWith(database, billing, [checkoutCompleted({ ...first, customerId })]);
  assert.equal(linked!.row.status, 'processed');
  const [refused] = await fulfilWith(database, billing, [checkoutCompleted({ ...second, customerId })], { maxAttempts: 1 });
  assert.equal(refused!.row.status, 'failed');
  for (const id of [customerId, first.accountId, second.accountId]) assert.ok(refused!.row.last_error?.includes(id), `${id} in ${refused!.row.last_error}`);
  assert.deepEqual(await accountOf(customerId), { account_id: first.accountId });
});

test("while a subscription's Checkout Session is open a summary of an unknown customer waits; 'ignored' when the wait gives up", async () => {
  await givenSubscription(database);
  const customerId = randomCustomerId();
  const summary = summaryUpdatedEvent(customerId, ['dashboard'], now());
  const [waiting] = await fulfilWith(database, entitlements, [summary]);
  assert.equal(waiting!.row.status, 'processing');
  const wait = await database.db.selectFrom('stripe_events').select('waits_for').where('event_id', '=', summary.id).executeTakeFirstOrThrow();
  assert.deepEqual(wait.waits_for, [`customer:${customerId}`]);
  await endWait(database, summary.id);
  const [gaveUp] = await fulfilWith(database, entitlements, [summary]);
  assert.equal(gaveUp!.row.status, 'ignored');
  assert.match(gaveUp!.row.last_error ?? '', new RegExp(`gave up waiting after 96 h: customer ${customerId} is not linked to an account yet`));
  assert.deepEqual(await mirrored(customerId), []);
});

test("a package's Checkout that makes a customer (it names features) holds an unknown customer's summary too; paid, it links and wakes it", async () => {
  await packageCatalog.insert(database.db, { id: 'featured', name: 'Featured', amount: 900, currency: 'chf', credits: 5, features: ['export'] }, null);
  const order = await givenOrder(database, { packageId: 'featured' });
  const customerId = randomCustomerId();
  const summary = summaryUpdatedEvent(customerId, ['export'], now());
  const [waiting] = await fulfilWith(database, entitlements, [summary]);
  assert.equal(waiting!.row.status, 'processing');
  const paid = paidEvent(order);
  const [granted] = await fulfilWith(database, credits, [sampleEvent(paid.type, { ...paid.data.object, customer: customerId })]);
  assert.equal(granted!.row.status, 'processed');
  const woken = await database.db.selectFrom('stripe_events').select(['waits_for', 'job_key']).where('event_id', '=', summary.id).executeTakeFirstOrThrow();
  assert.deepEqual([woken.waits_for, woken.job_key !== null], [null, true]);
  const [applied] = await fulfilWith(database, entitlements, [summary]);
  assert.equal(applied!.row.status, 'processed');
  assert.deepEqual(await mirrored(customerId), [{ lookup_key: 'export' }]);
});
