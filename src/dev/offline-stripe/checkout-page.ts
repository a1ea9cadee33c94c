// The page a Checkout Session's `url` opens on the offline stand-in, where Stripe would show its
// hosted payment form. Nobody pays offline: the page says which command completes this session as
// Stripe would (a signed checkout.session.completed, `npm run send-event`), for the order or
// subscription the service named in client_reference_id, and links where Stripe then sends the
// buyer. Not Stripe's API, so no API key is asked for: a browser opens it.
import { escapeHtml as escape, htmlPage, linkTo } from '../html-page.js';
import type { Params } from './wire.js';

/** Stripe's hosted Checkout lives at checkout.stripe.com/c/pay/<session id>; the stand-in's at <its url>/c/pay/<id>. */
export const CHECKOUT_PAGE_PATH = '/c/pay/';

/** The page of `session`, or of a session this stand-in does not hold. */
export function checkoutPage(session: Params | undefined): string {
  if (session === undefined) {
    return htmlPage(
      'Offline Stripe Checkout: no such session',
      '<p>The offline Stripe stand-in holds no such Checkout Session. It keeps them in memory: a restart of <code>npm start</code> forgets them. Create another with <code>POST /api/checkout</code> or <code>POST /api/subscriptions</code>.</p>',
    );
  }
  const id = String(session.id);
  const reference = typeof session.client_reference_id === 'string' ? session.client_reference_id : undefined;
  const subscription = session.mode === 'subscription';
  const command =
    reference === undefined
      ? undefined
      : subscription
        ? `npm run send-event -- --subscription ${reference}`
        : `npm run send-event -- checkout.session.completed --order ${reference}`;
  // Stripe fills the {CHECKOUT_SESSION_ID} template of success_url when it sends the buyer back.
  const successUrl = typeof session.success_url === 'string' ? session.success_url.replaceAll('{CHECKOUT_SESSION_ID}', id) : undefined;
  const cancelUrl = typeof session.cancel_url === 'string' ? session.cancel_url : undefined;
  return htmlPage(
    'Offline Stripe Checkout',
    `<p>This is the development stand-in for Stripe (no <code>STRIPE_SECRET_KEY</code>): no card is asked for and nothing is charged.
Checkout Session <code>${escape(id)}</code>, ${subscription ? 'a subscription' : 'a payment'} of <strong>${escape(amount(session))}</strong>.</p>
${
  command === undefined
    ? '<p>This session names no order or subscription (no <code>client_reference_id</code>): create it with <code>POST /api/checkout</code> or <code>POST /api/subscriptions</code>.</p>'
    : `<p>To complete it as Stripe would, send the ${subscription ? 'events of its first period' : '<code>checkout.session.completed</code> event'} to the service, signed with its webhook secret:</p>
<pre><code>${escape(command)}</code></pre>
<p>The service then grants the credits and tells your app (${subscription ? '<code>subscription.period_paid</code>' : '<code>order.paid</code>'}).</p>`
}
${successUrl === undefined ? '' : `<p>After paying, Stripe sends the buyer to ${linkTo(successUrl)}${cancelUrl === undefined ? '' : `; one who cancels, to ${linkTo(cancelUrl)}`}.</p>`}`,
  );
}

/**
 * Where Stripe's API amounts keep two decimals that Intl's currency data drops (ISK, HUF: Stripe's
 * special cases, https://docs.stripe.com/currencies#special-cases; the dashboard's format.js too).
 */
const STRIPE_DIGITS: Readonly<Record<string, number>> = { isk: 2, huf: 2 };

/** As a buyer reads it (CHF 49.00, ¥500): the API's minor units, by the currency's own decimals. */
function amount(session: Params): string {
  if (typeof session.currency !== 'string' || typeof session.amount_total !== 'number') return 'an unknown amount';
  let format: Intl.NumberFormat;
  try {
    format = new Intl.NumberFormat('en', { style: 'currency', currency: session.currency.toUpperCase() });
  } catch {
    return `${session.amount_total} ${session.currency} (minor units)`; // not an ISO 4217 code
  }
  const digits = STRIPE_DIGITS[session.currency.toLowerCase()] ?? format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(session.amount_total / 10 ** digits);
}
