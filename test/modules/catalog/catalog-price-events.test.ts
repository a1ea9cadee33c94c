// price.updated and product.updated: recorded, and an item whose Price (or Product) was archived
// at Stripe is archived too, the event saying why; a Price no item sells ends ignored.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exampleObject, randomStripeId, sampleEvent } from '../../../src/stripe/sample-events.js';
import { finishedEvent } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';

const file = serviceForFile();

/** An item sold through a fresh Price of `product`, created through the admin API. */
async function soldThroughPrice(path: '/packages' | '/plans', id: string, product: string): Promise<Record<string, unknown>> {
  const plan = path === '/plans';
  const price = {
    ...exampleObject('price'),
    id: randomStripeId('price'),
    product,
    unit_amount: 1900,
    currency: 'chf',
    type: plan ? 'recurring' : 'one_time',
    ...(!plan && { recurring: null }),
  };
  file.service.stripe.addPrice(price);
  const reply = await file.service.call('POST', `/admin/api${path}`, {
    body: { id, name: id, amount: 1900, currency: 'chf', credits: 10, stripe_price_id: price.id, ...(plan && { interval: 'month' }) },
  });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return price;
}

const activeOf = async (table: 'packages' | 'plans', id: string) =>
  table === 'packages'
    ? (await file.database.db.selectFrom('packages').select('active').where('package_id', '=', id).executeTakeFirstOrThrow()).active
    : (await file.database.db.selectFrom('plans').select('active').where('plan_id', '=', id).executeTakeFirstOrThrow()).active;

async function outcomeOf(type: string, object: Record<string, unknown>) {
  const event = sampleEvent(type, object);
  assert.equal((await file.service.deliver(event)).status, 200);
  return finishedEvent(file.database, event.id);
}

test('a Price archived at Stripe archives the package sold through it, saying why', async () => {
  const price = await soldThroughPrice('/packages', 'priced_pack', 'prod_pack');
  const unchanged = await outcomeOf('price.updated', { ...price, nickname: 'renamed' });
  assert.deepEqual([unchanged.status, unchanged.last_error], ['processed', null]);
  assert.equal(await activeOf('packages', 'priced_pack'), true);

  const archived = await outcomeOf('price.updated', { ...price, active: false });
  assert.equal(archived.status, 'processed');
  assert.match(archived.last_error ?? '', new RegExp(`archived package priced_pack: Price ${price.id as string} is archived`));
  assert.equal(await activeOf('packages', 'priced_pack'), false);
});

test('a Product archived at Stripe archives the plans sold through its Prices', async () => {
  await soldThroughPrice('/plans', 'priced_plan', 'prod_plan');
  const still = await outcomeOf('product.updated', { ...exampleObject('product'), id: 'prod_plan', active: true });
  assert.equal(still.status, 'processed');
  assert.equal(await activeOf('plans', 'priced_plan'), true);
  const archived = await outcomeOf('product.updated', { ...exampleObject('product'), id: 'prod_plan', active: false });
  assert.equal(archived.status, 'processed');
  assert.match(archived.last_error ?? '', /archived plan\(s\) priced_plan: Product prod_plan is archived/);
  assert.equal(await activeOf('plans', 'priced_plan'), false);
});

test("a Price or Product no item is sold through ends ignored, with each module's reason", async () => {
  const price = await outcomeOf('price.updated', exampleObject('price'));
  assert.equal(price.status, 'ignored');
  assert.match(price.last_error ?? '', /no package is sold through Price price_1MoBy5LkdIwHu7ixZhnattbh; no plan is sold through/);
  const product = await outcomeOf('product.updated', exampleObject('product'));
  assert.equal(product.status, 'ignored');
});
