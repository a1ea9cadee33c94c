// The objects the offline Stripe stand-in keeps in memory, and its endpoints over them: Checkout
// Sessions (payment and subscription mode), refunds, subscriptions (retrieve, and update for
// cancel_at_period_end), the event list; Prices and Products in prices.ts, active entitlements in
// entitlements.ts.
import { CHECKOUT_PAGE_PATH } from './checkout-page.js';
import { ActiveEntitlements } from './entitlements.js';
import { Meters } from './meters.js';
import { Catalogue } from './prices.js';
import { invalid, isRecord, integer, missing, ok, randomId, StripeApiError, type Params, type Reply } from './wire.js';

export const IMPLEMENTED =
  'Checkout Session create and retrieve, refund create, subscription retrieve and update, event list and retrieve, thin event (v2) list and retrieve, price and product retrieve and list, active entitlements list, meter list, meter event create and meter event summaries, and retrieve of any object added to it';

export class Resources {
  readonly sessions = new Map<string, Params>();
  readonly refunds = new Map<string, Params>();
  readonly subscriptions = new Map<string, Params>();
  readonly events: Array<{ event: Params; delivered: boolean }> = [];
  readonly catalogue = new Catalogue();
  readonly entitlements = new ActiveEntitlements();
  readonly meters = new Meters();
  /** Thin notifications, as GET /v2/core/events lists them. */
  readonly thinEvents: Params[] = [];
  /** Any other object by id (an invoice, a charge): what a thin notification's related_object.url fetches. */
  readonly objects = new Map<string, Params>();

  constructor(private readonly baseUrl: () => string) {}

  /** The reply for a request this stand-in implements, or undefined. Throws StripeApiError for a refused one. */
  route(method: string, path: string, params: Params): Reply | undefined {
    if (method === 'POST' && path === '/v1/checkout/sessions') return ok(this.createSession(params));
    if (method === 'POST' && path === '/v1/refunds') return ok(this.createRefund(params));
    if (method === 'GET' && path === '/v1/events') return ok(this.listEvents(params));
    if (method === 'GET' && path === '/v2/core/events') return ok(listThin(this.thinEvents, params));
    const v2Event = /^\/v2\/core\/events\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && v2Event !== undefined)
      return ok(found(new Map(this.thinEvents.map((e) => [e.id as string, e])), decodeURIComponent(v2Event), 'event', 'id'));
    const v1Event = /^\/v1\/events\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && v1Event !== undefined)
      return ok(found(new Map(this.events.map((e) => [e.event.id as string, e.event])), decodeURIComponent(v1Event), 'event', 'id'));
    const objectId = /^\/v1\/[a-z_/]+\/([^/]+)$/.exec(path)?.[1];
    const object = objectId === undefined ? undefined : this.objects.get(decodeURIComponent(objectId));
    if (method === 'GET' && object !== undefined) return ok(object);
    const session = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && session !== undefined) return ok(found(this.sessions, session, 'checkout.session', 'session'));
    const subscription = /^\/v1\/subscriptions\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && subscription !== undefined) return ok(found(this.subscriptions, subscription, 'subscription', 'id'));
    if (method === 'POST' && subscription !== undefined) return ok(this.updateSubscription(subscription, params));
    const entitled = this.entitlements.route(method, path, params);
    if (entitled) return ok(entitled);
    const metered = this.meters.route(method, path, params);
    if (metered) return metered;
    const catalogued = this.catalogue.route(method, path, params);
    return catalogued && ok(catalogued);
  }

  private createSession(params: Params): Params {
    if (params.mode === undefined) throw missing('mode');
    if (!['payment', 'setup', 'subscription'].includes(params.mode as string))
      throw invalid('Invalid mode: must be one of payment, setup, or subscription', 'mode');
    // Stripe's rule: each mode takes the data of the object it creates, and refuses the other's.
    const own = { payment_intent_data: 'payment', subscription_data: 'subscription' } as const;
    for (const [param, mode] of Object.entries(own)) {
      if (params[param] === undefined) continue;
      if (params.mode !== mode) throw invalid(`You can not pass \`${param}\` in \`${params.mode as string}\` mode.`, param);
      if (!isRecord(params[param])) throw invalid(`Invalid object`, param);
      metadataOf(params[param], `${param}[metadata]`);
    }
    metadataOf(params, 'metadata');
    // Stripe's rule: customer_creation is for payment mode (a subscription always has a customer).
    if (params.customer_creation !== undefined) {
      if (params.mode !== 'payment') throw invalid('`customer_creation` can only be used in `payment` mode.', 'customer_creation');
      if (!['always', 'if_required'].includes(params.customer_creation as string))
        throw invalid('Invalid customer_creation: must be one of always or if_required', 'customer_creation');
    }
    const lineItems = params.line_items;
    if (!Array.isArray(lineItems) || lineItems.length === 0) throw missing('line_items');
    let amount = 0;
    let currency: string | undefined;
    lineItems.forEach((item: unknown, i) => {
      const at = `line_items[${i}]`;
      const byId = isRecord(item) && typeof item.price === 'string';
      const charged = byId ? this.catalogue.lineItem(item.price as string, at) : inlinePrice(item, at);
      // Stripe's rule: a subscription's prices recur, a payment's do not.
      if ((params.mode === 'subscription') !== charged.recurring) {
        const subscription = params.mode === 'subscription';
        if (byId)
          throw invalid(`${at}[price] must be a ${subscription ? 'recurring Price in subscription mode' : 'one-time Price in payment mode'}`, `${at}[price]`);
        throw invalid(
          `${at}[price_data][recurring] is ${subscription ? 'required in subscription mode' : 'only allowed in subscription mode'}`,
          `${at}[price_data][recurring]`,
        );
      }
      if (currency !== undefined && charged.currency !== currency) throw invalid('All line_items must use the same currency.', at);
      currency = charged.currency;
      // Stripe's rule: a metered Price bills what its meter records, and refuses a quantity.
      if (charged.metered) {
        if ((item as Params).quantity !== undefined) throw invalid('Quantity should not be specified where usage_type is `metered`.', `${at}[quantity]`);
        return;
      }
      amount += charged.unitAmount * integer((item as Params).quantity, `${at}[quantity]`);
    });
    const id = `cs_test_${randomId(58)}`;
    const created = Math.floor(Date.now() / 1000);
    const session: Params = {
      id,
      object: 'checkout.session',
      amount_subtotal: amount,
      amount_total: amount,
      currency,
      cancel_url: params.cancel_url ?? null,
      success_url: params.success_url ?? null,
      client_reference_id: params.client_reference_id ?? null,
      client_secret: null,
      created,
      expires_at: created + 24 * 60 * 60,
      customer: customerOf(params),
      customer_details: null,
      customer_email: params.customer_email ?? null,
      invoice: null,
      livemode: false,
      locale: null,
      metadata: isRecord(params.metadata) ? params.metadata : {},
      mode: params.mode,
      payment_intent: null,
      payment_link: null,
      payment_method_types: ['card'],
      payment_status: 'unpaid',
      setup_intent: null,
      status: 'open',
      subscription: null,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: 'hosted',
      url: `${this.baseUrl()}${CHECKOUT_PAGE_PATH}${id}`,
    };
    this.sessions.set(id, session);
    if (params.mode === 'subscription') this.subscribe(session, params, created);
    return session;
  }

  /**
   * A subscription-mode session also creates its subscription at once, active, as if the customer
   * had paid right away (there is no customer here to pay). It is named after the session's
   * client_reference_id, `sub_test_<client_reference_id>`, so that `npm run send-event --
   * --subscription` names the subscription this stand-in holds, and cancelling it works offline.
   */
  private subscribe(session: Params, params: Params, created: number): void {
    const reference = typeof params.client_reference_id === 'string' ? params.client_reference_id : randomId(24);
    const id = `sub_test_${reference}`;
    const data = isRecord(params.subscription_data) ? params.subscription_data : {};
    const periodEnd = created + 30 * 24 * 60 * 60;
    this.subscriptions.set(id, {
      id,
      object: 'subscription',
      created,
      currency: session.currency,
      customer: session.customer,
      livemode: false,
      status: 'active',
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      pause_collection: null,
      metadata: isRecord(data.metadata) ? data.metadata : {},
      items: { object: 'list', data: [{ object: 'subscription_item', current_period_start: created, current_period_end: periodEnd }] },
    });
  }

  // The stand-in does not know PaymentIntents, so it needs the amount the service always sends.
  private createRefund(params: Params): Params {
    if (typeof params.payment_intent !== 'string') throw missing('payment_intent');
    const refund: Params = {
      id: `re_test_${randomId(24)}`,
      object: 'refund',
      amount: integer(params.amount, 'amount'),
      currency: null,
      charge: null,
      created: Math.floor(Date.now() / 1000),
      metadata: isRecord(params.metadata) ? params.metadata : {},
      payment_intent: params.payment_intent,
      reason: params.reason ?? null,
      status: 'succeeded',
    };
    this.refunds.set(refund.id as string, refund);
    return refund;
  }

  private updateSubscription(id: string, params: Params): Params {
    const subscription = found(this.subscriptions, id, 'subscription', 'id');
    if (params.cancel_at_period_end !== undefined) {
      if (params.cancel_at_period_end !== 'true' && params.cancel_at_period_end !== 'false')
        throw invalid('Invalid boolean: cancel_at_period_end', 'cancel_at_period_end');
      subscription.cancel_at_period_end = params.cancel_at_period_end === 'true';
    }
    if (isRecord(params.metadata)) subscription.metadata = { ...(subscription.metadata as Params), ...params.metadata };
    return subscription;
  }

  // Newest first, cursor by starting_after, like Stripe's list endpoints.
  private listEvents(params: Params): Params {
    const created = isRecord(params.created) ? params.created : {};
    const gte = created.gte === undefined ? 0 : integer(created.gte, 'created[gte]');
    const limit = params.limit === undefined ? 10 : integer(params.limit, 'limit');
    if (limit < 1 || limit > 100) throw invalid('limit must be between 1 and 100', 'limit');
    let matching = this.events
      .filter((e) => (e.event.created as number) >= gte)
      .filter((e) => params.delivery_success === undefined || String(e.delivered) === params.delivery_success)
      .map((e) => e.event)
      .sort((a, b) => (b.created as number) - (a.created as number));
    if (typeof params.starting_after === 'string') {
      const at = matching.findIndex((e) => e.id === params.starting_after);
      matching = at === -1 ? [] : matching.slice(at + 1);
    }
    return { object: 'list', url: '/v1/events', has_more: matching.length > limit, data: matching.slice(0, limit) };
  }
}

/** What a line item's inline price_data charges (a Price id is the catalogue's). */
function inlinePrice(item: unknown, at: string): { currency: string; unitAmount: number; recurring: boolean; metered?: boolean } {
  const priceData = isRecord(item) ? item.price_data : undefined;
  if (!isRecord(priceData)) throw invalid(`${at} needs [price] or [price_data].`, `${at}[price_data]`);
  if (typeof priceData.currency !== 'string') throw missing(`${at}[price_data][currency]`);
  return {
    currency: priceData.currency.toLowerCase(),
    unitAmount: integer(priceData.unit_amount, `${at}[price_data][unit_amount]`),
    recurring: isRecord(priceData.recurring),
  };
}

/**
 * Newest first, like Stripe's v2 list: `created[gte]` an ISO 8601 time, pages by the opaque
 * `page` token that `next_page_url` carries.
 */
function listThin(events: readonly Params[], params: Params): Params {
  const created = isRecord(params.created) ? params.created : {};
  const gte = created.gte === undefined ? 0 : typeof created.gte === 'string' ? Date.parse(created.gte) : Number.NaN;
  if (Number.isNaN(gte)) throw invalid('created[gte] must be an ISO 8601 timestamp', 'created[gte]');
  const limit = params.limit === undefined ? 20 : integer(params.limit, 'limit');
  if (limit < 1 || limit > 100) throw invalid('limit must be between 1 and 100', 'limit');
  const start = params.page === undefined ? 0 : integer(params.page, 'page');
  const matching = events
    .filter((e) => Date.parse(e.created as string) >= gte)
    .sort((a, b) => Date.parse(b.created as string) - Date.parse(a.created as string));
  const end = start + limit;
  return { data: matching.slice(start, end), next_page_url: end < matching.length ? `/v2/core/events?page=${end}` : null, previous_page_url: null };
}

/**
 * The customer a session makes: a subscription's always, a payment's when customer_creation is
 * 'always'. Stripe makes it when the buyer pays; nobody pays offline, so it is named at once,
 * `cus_test_<client_reference_id>`, which `npm run send-event` names in the session's completion.
 */
function customerOf(params: Params): string | null {
  if (params.mode !== 'subscription' && params.customer_creation !== 'always') return null;
  return `cus_test_${typeof params.client_reference_id === 'string' ? params.client_reference_id : randomId(14)}`;
}

/** Metadata is a map of strings (Stripe refuses a nested value), or absent. */
function metadataOf(holder: Params, param: string): void {
  const metadata = holder.metadata;
  if (metadata === undefined) return;
  if (!isRecord(metadata)) throw invalid('Invalid object', param);
  for (const [key, value] of Object.entries(metadata)) if (typeof value !== 'string') throw invalid(`Invalid string: ${param}[${key}]`, `${param}[${key}]`);
}

function found(objects: Map<string, Params>, id: string, type: string, param: string): Params {
  const object = objects.get(id);
  if (object !== undefined) return object;
  throw new StripeApiError(404, { type: 'invalid_request_error', code: 'resource_missing', param, message: `No such ${type}: '${id}'` });
}
