// Stripe Billing: plans that grant credits once per paid invoice, into the same account ledger as
// packages (docs/billing.md). invoice.paid is the one source of truth for fulfilment; every other
// type only links ids or keeps our copy of the subscription's state, in any arrival order.
//
// Once per object: invoice.paid (the invoice is the business key; a second Event object for one
// invoice ends 'duplicate'). Never collapsed: customer.subscription.updated (each is a state,
// ordered by when it was true), invoice.payment_failed, charge.refunded (once per refund).
import type { BusinessModule } from '../../business-module.js';
import { recordOnly } from '../../fulfilment/handler.js';
import { invoiceChargeRefunded } from './invoice-refunds.js';
import { invoicePaid, invoicePaymentPaid } from './invoice-paid.js';
import { eventsOfSubscription, subscriptionOfEvent } from './records.js';
import { billingApiRoutes } from './routes.js';
import { invoicePaymentFailed, subscriptionChanged, subscriptionCheckoutCompleted } from './subscription-events.js';
import { REFRESH_TASK, refreshSubscriptionTask } from './subscription-state.js';

export const billingModule: BusinessModule = {
  name: 'billing',
  migrations: new URL('../../../sql/billing/', import.meta.url),
  handlers: (config) => ({
    'invoice.paid': invoicePaid,
    'invoice_payment.paid': invoicePaymentPaid,
    'customer.subscription.created': subscriptionChanged,
    'customer.subscription.updated': subscriptionChanged,
    'customer.subscription.deleted': subscriptionChanged,
    'checkout.session.completed': subscriptionCheckoutCompleted,
    'invoice.payment_failed': invoicePaymentFailed,
    // The same payment as invoice.paid, told again: granting on it too would grant twice.
    'invoice.payment_succeeded': recordOnly,
    'charge.refunded': invoiceChargeRefunded(config.refundPolicy),
  }),
  tasks: (context) => ({ [REFRESH_TASK]: refreshSubscriptionTask(context) }),
  apiRoutes: billingApiRoutes,
  eventRecords: subscriptionOfEvent,
  searchEvents: eventsOfSubscription,
};
