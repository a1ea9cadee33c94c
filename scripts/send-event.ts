// npm run send-event: the local stand-in for `stripe trigger`. Builds realistic events from
// Stripe's example objects, signs each with the configured webhook secret (as Stripe signs each
// delivery) and posts them to a running instance: one event, or a subscription's whole period.
import { periodEvents } from '../src/modules/billing/sample-events.js';
import { accountSummaries } from '../src/modules/entitlements/sample-events.js';
import { billingPeriodEnd, type BillingInterval } from '../src/stripe/billing-period.js';
import {
  randomStripeId,
  checkoutSession,
  exampleObject,
  sampleEvent,
  signDelivery,
  thinNotification,
  type SampleEvent,
  type ThinNotification,
} from '../src/stripe/sample-events.js';
import { OFFLINE_STRIPE_PORT, TELL_EVENT_PATH } from '../src/dev/offline-stripe/index.js';
import { runScript, UsageError } from '../src/cli/script.js';
import { wholeNumberOption } from '../src/cli/whole-number.js';

const CHECKOUT_TYPES = ['checkout.session.completed', 'checkout.session.async_payment_succeeded'];
const EXAMPLES: Record<string, Parameters<typeof exampleObject>[0]> = {
  'payment_intent.succeeded': 'payment_intent',
  'charge.succeeded': 'charge',
  'charge.refunded': 'charge',
  'checkout.session.expired': 'checkout.session',
  // Stripe's example dispute names no PaymentIntent: another sale's, which ends 'ignored' at once.
  'charge.dispute.created': 'dispute',
  'charge.dispute.funds_withdrawn': 'dispute',
  'charge.dispute.funds_reinstated': 'dispute',
  'charge.dispute.closed': 'dispute',
};

runScript({
  usage: `usage: npm run send-event -- <type> [--order <order_id>] [--event-id <evt_…>] [--times <n>] [--thin [--stripe-url <base>]] [--url <base>] [--json]
       npm run send-event -- --subscription <subscription_id> [--cycle <n>] [--in-order] [--thin [--stripe-url <base>]] [--url <base>] [--json]
       npm run send-event -- --entitlements <account_id> [--thin [--stripe-url <base>]] [--url <base>] [--json]

Signs and posts one event to a running stripe-inbox (default ${'http://localhost:$PORT'}).
  ${CHECKOUT_TYPES.join(', ')}
      need --order: a paid Checkout Session for that order, at the order's price
  ${Object.keys(EXAMPLES).join(', ')}
      Stripe's example object
  any other type: an object with an id only (stored and ignored by the service)
--event-id reuses an id (a retry of the same event); --times sends the same event n times.
--thin sends each as a thin destination would: a v2.core.event notification (type v1.<type>)
naming its snapshot event, which it first hands to the offline Stripe stand-in the service
fetches from (--stripe-url; default STRIPE_API_BASE, else the stand-in npm start runs at
http://127.0.0.1:${OFFLINE_STRIPE_PORT}); --times resends that notification. Against real
Stripe, use a thin event destination instead.

--subscription sends every event of one paid period of that subscription (from POST
/api/subscriptions), shuffled as Stripe may deliver them: --cycle 1 (the default) is the first
period (the subscription's creation, its checkout, the first invoice paid), --cycle 2 and on
renewals. --in-order keeps Stripe's order.

--entitlements sends, for each Stripe customer linked to the account (by a completed checkout of
a plan, or of a package that names features), the entitlements.active_entitlement_summary.updated
Stripe would send: the features of the plan or package bought through that customer's checkout.
It reads the account's links from the service's database (DATABASE_URL, or the embedded one).`,
  options: {
    order: { type: 'string' },
    subscription: { type: 'string' },
    entitlements: { type: 'string' },
    cycle: { type: 'string', default: '1' },
    'in-order': { type: 'boolean' },
    'event-id': { type: 'string' },
    times: { type: 'string', default: '1' },
    url: { type: 'string' },
    thin: { type: 'boolean' },
    'stripe-url': { type: 'string' },
  },
  positionals: true,
  async run({ values, positionals }, ctx) {
    const { config } = ctx;
    const base = typeof values.url === 'string' ? values.url : `http://localhost:${config.port}`;
    const secret = config.webhookSecrets[0]!;
    const stripeUrl = typeof values['stripe-url'] === 'string' ? values['stripe-url'] : (config.stripeApiBase ?? `http://127.0.0.1:${OFFLINE_STRIPE_PORT}`);
    // What goes to the webhook: the event, or its thin notification once the stand-in holds the event.
    const deliveryOf = async (event: SampleEvent): Promise<SampleEvent | ThinNotification> => {
      if (values.thin !== true) return event;
      await tellStandIn(stripeUrl, event);
      return thinNotification(event);
    };
    if (typeof values.entitlements === 'string') {
      if (positionals.length > 0) throw new UsageError("--entitlements sends the account's summaries: give no event type with it");
      const events = await accountSummaries((await ctx.database()).db, values.entitlements, Math.floor(Date.now() / 1000));
      if (events.length === 0)
        throw new UsageError(`account ${values.entitlements} has no linked Stripe customer: complete a checkout of a plan first (--subscription)`);
      const replies = [];
      for (const event of events) {
        const delivery = await deliveryOf(event);
        replies.push({ event_id: delivery.id, type: delivery.type, ...(await post(base, delivery, secret)) });
      }
      return {
        json: { account_id: values.entitlements, replies },
        text: replies.map((r) => `${r.event_id} ${r.type} → ${r.status} ${JSON.stringify(r.body)}`).join('\n'),
        exitCode: replies.every((r) => r.status === 200) ? 0 : 1,
      };
    }
    if (typeof values.subscription === 'string') {
      if (positionals.length > 0) throw new UsageError('--subscription sends a whole period: give no event type with it');
      const cycle = wholeNumberOption(values.cycle, '--cycle', { min: 1, max: 1000, example: '2' });
      const subscription = await getJson<SubscriptionView>(
        base,
        `/api/subscriptions/${encodeURIComponent(values.subscription)}`,
        config.apiToken,
        'POST /api/subscriptions',
      );
      const events = await subscriptionPeriod(base, config.apiToken, subscription, cycle);
      const sent = values['in-order'] === true ? events : shuffle(events);
      const replies = [];
      for (const event of sent) {
        const delivery = await deliveryOf(event);
        replies.push({ event_id: delivery.id, type: delivery.type, ...(await post(base, delivery, secret)) });
      }
      return {
        json: { subscription_id: subscription.subscription_id, cycle, replies },
        text: replies.map((r) => `${r.event_id} ${r.type} → ${r.status} ${JSON.stringify(r.body)}`).join('\n'),
        exitCode: replies.every((r) => r.status === 200) ? 0 : 1,
      };
    }
    const [type, ...extra] = positionals;
    if (!type || extra.length > 0) throw new UsageError('give exactly one event type, e.g. checkout.session.completed');
    const times = wholeNumberOption(values.times, '--times', { min: 1, max: 1000, example: '3' });

    let object: Record<string, unknown>;
    if (CHECKOUT_TYPES.includes(type)) {
      if (typeof values.order !== 'string') throw new UsageError(`${type} needs --order <order_id> (from POST /api/checkout)`);
      const order = await getJson<OrderView>(base, `/api/orders/${encodeURIComponent(values.order)}`, config.apiToken, 'POST /api/checkout');
      object = checkoutSession({
        orderId: order.order_id,
        amount: order.amount,
        currency: order.currency,
        ...(order.checkout_session_id && { sessionId: order.checkout_session_id }),
      });
      // A package that grants features asked Checkout for a customer: the one the stand-in named.
      // Read through the API, as the order is: the instance may be another host's (a compose stack).
      const packages = await getJson<PackageView[]>(base, '/api/packages', config.apiToken, 'npm run catalog -- add-package');
      const features = packages.find((p) => p.id === order.package_id)?.features ?? [];
      if (order.checkout_session_id && features.length > 0) object.customer = `cus_test_${order.order_id}`;
    } else {
      object = EXAMPLES[type] ? exampleObject(EXAMPLES[type]) : { id: randomStripeId('obj'), object: type.split('.')[0] };
    }
    const event = await deliveryOf(sampleEvent(type, object, typeof values['event-id'] === 'string' ? { id: values['event-id'] } : {}));

    const replies: Array<{ status: number; body: unknown }> = [];
    for (let i = 0; i < times; i++) replies.push(await post(base, event, secret));
    const ok = replies.every((r) => r.status === 200);
    return {
      json: { event_id: event.id, type: event.type, replies },
      text: replies.map((r) => `${event.id} ${event.type} → ${r.status} ${JSON.stringify(r.body)}`).join('\n'),
      exitCode: ok ? 0 : 1,
    };
  },
});

interface PackageView {
  id: string;
  features: string[];
}

interface OrderView {
  order_id: string;
  package_id: string;
  amount: number;
  currency: string;
  checkout_session_id: string | null;
}

interface SubscriptionView {
  subscription_id: string;
  plan_id: string;
  checkout_session_id: string | null;
  stripe_subscription_id: string | null;
  current_period_end: string | null;
}

/** Signs the event anew, like each Stripe delivery attempt (new timestamp, same event id), and posts it. */
async function post(base: string, event: unknown, secret: string): Promise<{ status: number; body: unknown }> {
  const { body, headers } = signDelivery(event, secret);
  const response = await fetch(`${base}/webhooks/stripe`, { method: 'POST', body, headers }).catch((error: unknown) => {
    throw new Error(`cannot reach ${base}: is the service running (npm start)?`, { cause: error });
  });
  return { status: response.status, body: await response.json() };
}

/** Hands a snapshot event to the offline stand-in, so that the worker's fetch for its thin notification finds it. */
async function tellStandIn(stripeUrl: string, event: SampleEvent): Promise<void> {
  const told = await fetch(stripeUrl + TELL_EVENT_PATH, { method: 'POST', body: JSON.stringify(event) }).catch((error: unknown) => {
    throw new Error(`cannot reach the offline Stripe stand-in at ${stripeUrl}: is npm start running without STRIPE_SECRET_KEY? (or pass --stripe-url)`, {
      cause: error,
    });
  });
  if (!told.ok) throw new Error(`${stripeUrl}${TELL_EVENT_PATH} answered ${told.status}: --thin needs the offline Stripe stand-in, not Stripe`);
}

async function getJson<T>(base: string, path: string, apiToken: string, howToMake: string): Promise<T> {
  const response = await fetch(base + path, { headers: { authorization: `Bearer ${apiToken}` } }).catch((error: unknown) => {
    throw new Error(`cannot reach ${base}: is the service running (npm start)?`, { cause: error });
  });
  if (response.status === 404) throw new UsageError(`${decodeURIComponent(path.split('/').at(-1)!)} not found: create one with ${howToMake}`);
  if (!response.ok) throw new Error(`GET ${path} answered ${response.status}`);
  return (await response.json()) as T;
}

/**
 * The events of one period, at the plan's price. The Stripe subscription is the one the offline
 * stand-in made for the checkout (`sub_test_<subscription_id>`, src/dev/offline-stripe/), so every
 * cycle names the same one; a renewal's period follows the one the service holds.
 */
async function subscriptionPeriod(base: string, apiToken: string, subscription: SubscriptionView, cycle: number): Promise<SampleEvent[]> {
  const plans = await getJson<Array<{ id: string; amount: number; currency: string; interval: BillingInterval; interval_count: number }>>(
    base,
    '/api/plans',
    apiToken,
    'a migration',
  );
  const plan = plans.find((p) => p.id === subscription.plan_id);
  if (!plan) throw new Error(`plan ${subscription.plan_id} of subscription ${subscription.subscription_id} is not listed by GET /api/plans`);
  const now = Math.floor(Date.now() / 1000);
  const held = subscription.current_period_end === null ? undefined : Math.floor(Date.parse(subscription.current_period_end) / 1000);
  const sample = {
    subscriptionId: subscription.subscription_id,
    stripeSubscriptionId: subscription.stripe_subscription_id ?? `sub_test_${subscription.subscription_id}`,
    // The session POST /api/subscriptions stored: its completion is what links the Stripe subscription.
    checkoutSessionId: subscription.checkout_session_id ?? undefined,
    // The customer the stand-in's subscription Checkout named (src/dev/offline-stripe/resources.ts).
    customerId: `cus_test_${subscription.subscription_id}`,
    amount: plan.amount,
    currency: plan.currency,
  };
  // Events are never from the future: the period's last one is created now. The first period
  // starts now and lasts the plan's interval; a renewal starts where the period the service holds
  // ends (or, if it has not fulfilled the previous period yet, cycle - 1 intervals from now).
  const next = (start: number, intervals = 1) => billingPeriodEnd(start, plan.interval, plan.interval_count * intervals);
  const periodStart = cycle === 1 ? now : (held ?? next(now, cycle - 1));
  return periodEvents(sample, { cycle, lastAt: now, periodStart, periodEnd: next(periodStart) });
}

function shuffle<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
