// npm run send-event: the local stand-in for `stripe trigger`. Builds a realistic event from
// Stripe's example objects, signs it with the configured webhook secret (as Stripe signs each
// delivery) and posts it to a running instance.
import { randomStripeId, checkoutSession, exampleObject, sampleEvent, signDelivery } from '../src/stripe/sample-events.js';
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';

const CHECKOUT_TYPES = ['checkout.session.completed', 'checkout.session.async_payment_succeeded'];
const EXAMPLES: Record<string, Parameters<typeof exampleObject>[0]> = {
  'payment_intent.succeeded': 'payment_intent',
  'charge.succeeded': 'charge',
  'charge.refunded': 'charge',
  'checkout.session.expired': 'checkout.session',
};

runScript({
  usage: `usage: npm run send-event -- <type> [--order <order_id>] [--event-id <evt_…>] [--times <n>] [--url <base>] [--json]

Signs and posts one event to a running stripe-inbox (default ${'http://localhost:$PORT'}).
  ${CHECKOUT_TYPES.join(', ')}
      need --order: a paid Checkout Session for that order, at the order's price
  ${Object.keys(EXAMPLES).join(', ')}
      Stripe's example object
  any other type: an object with an id only (stored and ignored by the service)
--event-id reuses an id (a retry of the same event); --times sends the same event n times.`,
  options: {
    order: { type: 'string' },
    'event-id': { type: 'string' },
    times: { type: 'string', default: '1' },
    url: { type: 'string' },
  },
  positionals: true,
  async run({ values, positionals }, { config }) {
    const [type, ...extra] = positionals;
    if (!type || extra.length > 0) throw new UsageError('give exactly one event type, e.g. checkout.session.completed');
    const times = wholeNumberOption(values.times, '--times', { min: 1, max: 1000, example: '3' });
    const base = typeof values.url === 'string' ? values.url : `http://localhost:${config.port}`;

    let object: Record<string, unknown>;
    if (CHECKOUT_TYPES.includes(type)) {
      if (typeof values.order !== 'string') throw new UsageError(`${type} needs --order <order_id> (from POST /api/checkout)`);
      const order = await getOrder(base, values.order, config.apiToken);
      object = checkoutSession({ orderId: order.order_id, amount: order.amount, currency: order.currency, ...(order.checkout_session_id && { sessionId: order.checkout_session_id }) });
    } else {
      object = EXAMPLES[type] ? exampleObject(EXAMPLES[type]) : { id: randomStripeId('obj'), object: type.split('.')[0] };
    }
    const event = sampleEvent(type, object, typeof values['event-id'] === 'string' ? { id: values['event-id'] } : {});

    const replies: Array<{ status: number; body: unknown }> = [];
    for (let i = 0; i < times; i++) {
      // Each attempt is signed anew, like each Stripe delivery: new timestamp, same event id.
      const { body, headers } = signDelivery(event, config.webhookSecrets[0]!);
      const response = await fetch(`${base}/webhooks/stripe`, { method: 'POST', body, headers }).catch((error: unknown) => {
        throw new Error(`cannot reach ${base}: is the service running (npm start)?`, { cause: error });
      });
      replies.push({ status: response.status, body: await response.json() });
    }
    const ok = replies.every((r) => r.status === 200);
    return {
      json: { event_id: event.id, type, replies },
      text: replies.map((r) => `${event.id} ${type} → ${r.status} ${JSON.stringify(r.body)}`).join('\n'),
      exitCode: ok ? 0 : 1,
    };
  },
});

interface OrderView {
  order_id: string;
  amount: number;
  currency: string;
  checkout_session_id: string | null;
}

async function getOrder(base: string, orderId: string, apiToken: string): Promise<OrderView> {
  const response = await fetch(`${base}/api/orders/${encodeURIComponent(orderId)}`, { headers: { authorization: `Bearer ${apiToken}` } }).catch(
    (error: unknown) => {
      throw new Error(`cannot reach ${base}: is the service running (npm start)?`, { cause: error });
    },
  );
  if (response.status === 404) throw new UsageError(`order ${orderId} not found: create one with POST /api/checkout`);
  if (!response.ok) throw new Error(`GET /api/orders/${orderId} answered ${response.status}`);
  return (await response.json()) as OrderView;
}
