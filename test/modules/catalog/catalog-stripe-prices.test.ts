// A package or plan sold through a Stripe Price: the Price is fetched when the row is created and
// refused when it does not say what the row says (amount, currency, one-time or recurring,
// interval) or is archived; Checkout then sells line_items[0][price], not price_data.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exampleObject, randomStripeId } from '../../../src/stripe/sample-events.js';
import { newAccountId } from '../../support/factories.js';
import { serviceForFile } from '../../support/service.js';

const file = serviceForFile({ env: { ROLE: 'web' } });
const admin = (method: string, path: string, body: unknown) => file.service.call(method, `/admin/api${path}`, { body });

/** A Price at the fake Stripe, Stripe's example with what the test is about. */
function givenPrice(terms: { amount: number; currency: string; recurring?: { interval: string; interval_count: number }; active?: boolean }): string {
  const id = randomStripeId('price');
  file.service.stripe.addPrice({
    ...exampleObject('price'),
    id,
    product: 'prod_thesis',
    unit_amount: terms.amount,
    unit_amount_decimal: String(terms.amount),
    currency: terms.currency,
    active: terms.active ?? true,
    type: terms.recurring ? 'recurring' : 'one_time',
    recurring: terms.recurring ? { ...(exampleObject('price').recurring as object), ...terms.recurring } : null,
  });
  return id;
}

const sessionOf = (clientReference: unknown) =>
  file.service.stripe.requests.findLast((r) => r.path === '/v1/checkout/sessions' && r.params.client_reference_id === clientReference)!;

test('a Price-backed package is checked at creation, then bought with line_items[0][price]', async () => {
  const price = givenPrice({ amount: 1900, currency: 'chf' });
  const created = await admin('POST', '/packages', {
    id: 'thesis_price',
    name: 'Thesis check',
    amount: 1900,
    currency: 'chf',
    credits: 10,
    stripe_price_id: price,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.stripe_price_id, price);
  const row = await file.database.db.selectFrom('packages').select('stripe_product_id').where('package_id', '=', 'thesis_price').executeTakeFirstOrThrow();
  assert.equal(row.stripe_product_id, 'prod_thesis');
  assert.match(
    (await admin('POST', '/packages', { id: 'twin', name: 'Twin', amount: 1900, currency: 'chf', credits: 10, stripe_price_id: price })).body.error as string,
    /already sells/,
  );

  const checkout = await file.service.call('POST', '/api/checkout', { body: { package_id: 'thesis_price', account_id: newAccountId() } });
  assert.equal(checkout.status, 201, JSON.stringify(checkout.body));
  assert.deepEqual(sessionOf(checkout.body.order_id).params.line_items, [{ quantity: '1', price }]);
});

test('a Price-backed plan is bought with line_items[0][price]', async () => {
  const price = givenPrice({ amount: 1900, currency: 'eur', recurring: { interval: 'year', interval_count: 1 } });
  const created = await admin('POST', '/plans', {
    id: 'yearly_price',
    name: 'Yearly',
    amount: 1900,
    currency: 'eur',
    credits: 1000,
    interval: 'year',
    stripe_price_id: price,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const reply = await file.service.call('POST', '/api/subscriptions', { body: { plan_id: 'yearly_price', account_id: newAccountId() } });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  assert.deepEqual(sessionOf(reply.body.subscription_id).params.line_items, [{ quantity: '1', price }]);
});

test('a Price that does not say what the row says is refused, naming what differs', async () => {
  const base = { name: 'Refused', amount: 1900, currency: 'chf', credits: 10 };
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['/packages', { ...base, stripe_price_id: givenPrice({ amount: 2900, currency: 'chf' }) }, /unit_amount is 2900, the amount 1900/],
    ['/packages', { ...base, stripe_price_id: givenPrice({ amount: 1900, currency: 'eur' }) }, /currency is eur, the currency chf/],
    ['/packages', { ...base, stripe_price_id: givenPrice({ amount: 1900, currency: 'chf', active: false }) }, /archived \(active: false\)/],
    [
      '/packages',
      { ...base, stripe_price_id: givenPrice({ amount: 1900, currency: 'chf', recurring: { interval: 'month', interval_count: 1 } }) },
      /package needs a one_time Price/,
    ],
    ['/plans', { ...base, interval: 'month', stripe_price_id: givenPrice({ amount: 1900, currency: 'chf' }) }, /plan needs a recurring Price/],
    [
      '/plans',
      { ...base, interval: 'month', stripe_price_id: givenPrice({ amount: 1900, currency: 'chf', recurring: { interval: 'month', interval_count: 3 } }) },
      /bills every 3 month, the plan every 1 month/,
    ],
    ['/packages', { ...base, stripe_price_id: 'price_never_made' }, /Stripe has no Price price_never_made/],
  ];
  for (const [i, [path, body, error]] of cases.entries()) {
    const reply = await admin('POST', path, { ...body, id: `refused_${i}` });
    assert.equal(reply.status, 422, `${i}: ${JSON.stringify(reply.body)}`);
    assert.match(reply.body.error as string, /^stripe_price_id: /);
    assert.match(reply.body.error as string, error);
  }
  const kept = await file.database.db.selectFrom('packages').select('package_id').where('package_id', 'like', 'refused_%').execute();
  assert.deepEqual(kept, []);
});

test('Stripe failing while the Price is fetched is 502, and nothing is created', async () => {
  file.service.stripe.failNext(2);
  const reply = await admin('POST', '/packages', {
    id: 'unlucky',
    name: 'Unlucky',
    amount: 1900,
    currency: 'chf',
    credits: 10,
    stripe_price_id: givenPrice({ amount: 1900, currency: 'chf' }),
  });
  assert.equal(reply.status, 502, JSON.stringify(reply.body));
  assert.equal((await file.service.call('PATCH', '/admin/api/packages/unlucky', { body: { name: 'x' } })).status, 404);
});
