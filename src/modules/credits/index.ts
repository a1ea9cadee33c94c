// The credits business: one-time packages sold with Stripe Checkout. A paid session grants the
// order's credits once, into the account ledger (src/modules/ledger/); a refund takes them back
// per REFUND_POLICY, a dispute per DISPUTE_POLICY (charge-disputed.ts).
//
// Once per object (docs/design.md, invariant 4): checkout.session.completed and
// checkout.session.async_payment_succeeded. A second Event object for the same session must not
// grant twice; the order's grant decides, not the event, and the second ends 'duplicate'
// (docs/events.md). charge.refunded legitimately repeats for one charge (once per refund) and is
// never collapsed: each Event object runs its handler. Neither are the dispute events: each
// records Stripe's state of the dispute, and what they establish converges (charge-disputed.ts).
import { defineModule, recordOnly } from '../../business-module.js';
import { catalogPriceHandlers } from '../catalog/index.js';
import { DISPUTE_EVENT_TYPES } from '../ledger/index.js';
import { chargeDisputed } from './charge-disputed.js';
import { chargeRefunded } from './charge-refunded.js';
import { checkoutSessionPaid } from './checkout-session-paid.js';
import { packageCatalog } from './package-catalog.js';
import { eventsOfOrder, grantsOfAccount, orderOfEvent } from './records.js';
import { creditsAdminRoutes, creditsApiRoutes } from './routes.js';
import { creditsSettings } from './settings.js';
import type { CreditTables } from './tables.js';

// Packages as catalog items, for the admin API's routes, npm run catalog and the start-up check.
export { newPackage, packageCatalog } from './package-catalog.js';
// Whether a package's Checkout may still link a Stripe customer (the entitlements module), and what
// a package sold through a Checkout Session grants (npm run send-event --entitlements).
export { customerCheckoutOpenSince, featuresOfCheckoutSession } from './orders.js';
// What a reversed run pays of what refunds and disputes of orders are still owed (src/modules/ledger/revocations.ts).
export { settleOrderShortfalls } from './credit-revocations.js';

export const creditsModule = defineModule({
  name: 'credits',
  settings: creditsSettings,
  // Its first tables were created by the core's sql/0001 and sql/0003, before modules had migrations.
  migrations: new URL('../../../sql/credits/', import.meta.url),
  tables: ['packages', 'orders', 'credit_grants', 'credit_revocations', 'refund_requests'] satisfies Array<keyof CreditTables>,
  handlers: (settings, context) => ({
    'checkout.session.completed': { batch: checkoutSessionPaid(context) },
    'checkout.session.async_payment_succeeded': { batch: checkoutSessionPaid(context) },
    // The same payment as the session's, told again: a second cashier would grant twice.
    'payment_intent.succeeded': recordOnly,
    'charge.succeeded': recordOnly,
    'checkout.session.async_payment_failed': recordOnly,
    'checkout.session.expired': recordOnly,
    'charge.refunded': chargeRefunded(settings.refundPolicy, context.notifications),
    // A package's Price or Product archived at Stripe archives the package (src/modules/catalog/).
    ...catalogPriceHandlers(packageCatalog),
    ...Object.fromEntries(DISPUTE_EVENT_TYPES.map((type) => [type, chargeDisputed(settings, context.notifications)])),
  }),
  apiRoutes: creditsApiRoutes,
  adminRoutes: creditsAdminRoutes,
  eventRecords: orderOfEvent,
  searchEvents: eventsOfOrder,
  accountRecords: grantsOfAccount,
});
