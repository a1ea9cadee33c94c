// Where Stripe Checkout sends the buyer back: the selling application's pages, one pair for every
// Checkout Session this service opens, whichever module opens it (credits for a package, billing
// for a subscription). Declared here once, and listed in the settings of each module that opens a
// session, so that neither of those modules depends on the other for them, and either runs alone.
// Nothing to run: no event, table or route of its own, so it is no entry of src/modules/index.ts.
// The defaults are pages the service serves in development only (src/dev/checkout-return-pages.ts).
import { defineSettings, httpUrl } from '../../business-module.js';

export const checkoutReturnSettings = defineSettings({
  checkoutSuccessUrl: {
    env: 'CHECKOUT_SUCCESS_URL',
    schema: httpUrl,
    example: 'https://example.com/thanks?session_id={CHECKOUT_SESSION_ID}',
    default: (r) => `http://localhost:${r.port}/checkout/success?session_id={CHECKOUT_SESSION_ID}`,
    requiredInProduction: true,
  },
  checkoutCancelUrl: {
    env: 'CHECKOUT_CANCEL_URL',
    schema: httpUrl,
    example: 'https://example.com/pricing',
    default: (r) => `http://localhost:${r.port}/checkout/cancel`,
    requiredInProduction: true,
  },
});
