// Stripe Billing: plans that grant credits once per paid invoice, into the account ledger that
// packages grant into too (src/modules/ledger/; docs/billing.md). invoice.paid is the one source
// of truth for fulfilment; every other type only links ids or keeps our copy of the
// subscription's state, in any arrival order.
//
// Once per object: invoice.paid (the invoice is the business key; a second Event object for one
// invoice ends 'duplicate'). Never collapsed: customer.subscription.updated (each is a state,
// ordered by when it was true), invoice.payment_failed, charge.refunded (once per refund).
import { defineModule, recordOnly } from '../../business-module.js';
import { catalogPriceHandlers } from '../catalog/index.js';
import { DISPUTE_EVENT_TYPES } from '../ledger/index.js';
import { invoiceChargeDisputed } from './invoice-disputes.js';
import { invoiceChargeRefunded } from './invoice-refunds.js';
import { invoicePaid, invoicePaymentPaid } from './invoice-paid.js';
import { planCatalog } from './plan-catalog.js';
import { eventsOfSubscription, subscriptionOfEvent, subscriptionsOfAccount } from './records.js';
import { billingAdminRoutes, billingApiRoutes } from './routes.js';
import { billingSettings } from './settings.js';
import { invoicePaymentFailed, subscriptionChanged, subscriptionCheckoutCompleted } from './subscription-events.js';
import { REFRESH_TASK, refreshSubscriptionTask } from './subscription-state.js';
import type { BillingTables } from './tables.js';

// Plans as catalog items, for the admin API's routes, npm run catalog and the start-up check.
export { newPlan, planCatalog } from './plan-catalog.js';
// Whether a subscription's Checkout Session may still link a Stripe customer (the entitlements module).
export { planFeaturesOfCheckoutSession, subscriptionCheckoutOpenSince } from './subscriptions.js';
// What a reversed run pays of what refunds and disputes of paid periods are still owed (src/modules/ledger/revocations.ts).
export { settlePeriodShortfalls } from './invoice-disputes.js';
// What the usage module records a run against (src/modules/usage/).
export { activeMeteredSubscription, type MeteredSubscription } from './metered-subscriptions.js';

export const billingModule = defineModule({
  name: 'billing',
  settings: billingSettings,
  migrations: new URL('../../../sql/billing/', import.meta.url),
  tables: ['plans', 'subscriptions', 'invoice_grants', 'invoice_payments'] satisfies Array<keyof BillingTables>,
  handlers: (settings, { notifications, wake }) => ({
    'invoice.paid': invoicePaid({ notifications, wake }),
    'invoice_payment.paid': invoicePaymentPaid(wake),
    'customer.subscription.created': subscriptionChanged(notifications),
    'customer.subscription.updated': subscriptionChanged(notifications),
    'customer.subscription.deleted': subscriptionChanged(notifications),
    'checkout.session.completed': subscriptionCheckoutCompleted(wake),
    'invoice.payment_failed': invoicePaymentFailed,
    // The same payment as invoice.paid, told again: granting on it too would grant twice.
    'invoice.payment_succeeded': recordOnly,
    'charge.refunded': invoiceChargeRefunded(settings.refundPolicy, notifications),
    // A plan's Price or Product archived at Stripe archives the plan (src/modules/catalog/).
    ...catalogPriceHandlers(planCatalog),
    ...Object.fromEntries(DISPUTE_EVENT_TYPES.map((type) => [type, invoiceChargeDisputed(settings, notifications)])),
  }),
  tasks: (context) => ({ [REFRESH_TASK]: refreshSubscriptionTask(context) }),
  apiRoutes: billingApiRoutes,
  adminRoutes: billingAdminRoutes,
  eventRecords: subscriptionOfEvent,
  searchEvents: eventsOfSubscription,
  accountRecords: subscriptionsOfAccount,
});
