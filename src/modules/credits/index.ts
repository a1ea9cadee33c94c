// The credits business: one-time packages sold with Stripe Checkout. A paid session grants the
// order's credits once; a refund takes them back per REFUND_POLICY; the selling application reads
// an account's quota and uses it one run at a time.
//
// Once per object (DESIGN invariant 4): checkout.session.completed and
// checkout.session.async_payment_succeeded. A second Event object for the same session must not
// grant twice; the order's grant decides, not the event, and the second ends 'duplicate'
// (docs/events.md). charge.refunded legitimately repeats for one charge (once per refund) and is
// never collapsed: each Event object runs its handler.
import type { BusinessModule } from '../../business-module.js';
import { recordOnly } from '../../fulfilment/handler.js';
import { chargeRefunded } from './charge-refunded.js';
import { checkoutSessionPaid } from './checkout-session-paid.js';
import { eventsOfOrder, orderOfEvent } from './records.js';
import { creditsAdminRoutes, creditsApiRoutes } from './routes.js';

export const creditsModule: BusinessModule = {
  name: 'credits',
  handlers: (config) => ({
    'checkout.session.completed': { batch: checkoutSessionPaid },
    'checkout.session.async_payment_succeeded': { batch: checkoutSessionPaid },
    // The same payment as the session's, told again: a second cashier would grant twice.
    'payment_intent.succeeded': recordOnly,
    'charge.succeeded': recordOnly,
    'checkout.session.async_payment_failed': recordOnly,
    'checkout.session.expired': recordOnly,
    'charge.refunded': chargeRefunded(config.refundPolicy),
  }),
  apiRoutes: creditsApiRoutes,
  adminRoutes: creditsAdminRoutes,
  eventRecords: orderOfEvent,
  searchEvents: eventsOfOrder,
};

// What other modules may use: the account ledger, since a subscription's paid periods grant into
// the same quota (GET /api/accounts/:id/quota counts both), and the refund policy's arithmetic.
export { addGrants, takeBackCredits } from './account-quota.js';
export { revocationTarget } from './credit-revocations.js';
export { accountId } from './routes.js';
export type { CreditTables } from './tables.js';
