// Development only: the pages CHECKOUT_SUCCESS_URL and CHECKOUT_CANCEL_URL default to
// (src/modules/checkout/index.ts), so that a buyer sent back by Checkout in development lands on a
// page that says what happens next instead of a 404. In production both URLs are required and are
// the selling app's own pages; src/http/app.ts mounts these in development only.
import express from 'express';
import { escapeHtml, htmlPage } from './html-page.js';

/** The defaults' paths, on the service's own port. */
export const DEV_CHECKOUT_RETURN_PATHS = { success: '/checkout/success', cancel: '/checkout/cancel' } as const;

const NEXT = `<p>The buyer's return grants nothing: the credits come with Stripe's signed
<code>checkout.session.completed</code> event at <code>POST /webhooks/stripe</code>, however the buyer
leaves the payment page. With the offline Stripe stand-in, send it with the command its Checkout page
shows; in Stripe's test mode, <code>stripe listen --forward-to localhost:3000/webhooks/stripe</code> forwards it.</p>`;

export function devCheckoutReturnPages(): express.Router {
  const router = express.Router();
  router.get(DEV_CHECKOUT_RETURN_PATHS.success, (req, res) => {
    // Stripe fills {CHECKOUT_SESSION_ID} in; shown as text only, whatever it holds.
    const session = typeof req.query.session_id === 'string' ? req.query.session_id : undefined;
    res.type('html').send(
      htmlPage(
        'Checkout complete (development)',
        `<p>Stripe Checkout sent the buyer back here${session === undefined ? '' : ` from session <code>${escapeHtml(session)}</code>`}:
this is the development default of <code>CHECKOUT_SUCCESS_URL</code>. In production it is a page of your app, required.</p>
${NEXT}`,
      ),
    );
  });
  router.get(DEV_CHECKOUT_RETURN_PATHS.cancel, (_req, res) => {
    res.type('html').send(
      htmlPage(
        'Checkout cancelled (development)',
        `<p>The buyer left Stripe Checkout without paying: this is the development default of <code>CHECKOUT_CANCEL_URL</code>.
In production it is a page of your app (its pricing page, say), required. The order stays <code>pending</code>; nothing is granted.</p>`,
      ),
    );
  });
  return router;
}
