// Kysely's view of the billing module's tables (sql/billing/). Its code reaches them with
// `withBillingTables(db)`; the account balances it grants into are the ledger's.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, Defaulted } from '../../business-module.js';
import type { CatalogColumns, PlanInterval } from '../catalog/index.js';

export interface PlansTable extends CatalogColumns {
  plan_id: string;
  interval: PlanInterval;
  /** Bills every interval_count intervals (sql/billing/0021). */
  interval_count: Defaulted<number>;
  /** A usage-billed plan's meter (sql/billing/0040): its subscriptions' runs are reported there (src/modules/usage/). */
  meter_event_name: Defaulted<string | null>;
}

export interface SubscriptionsTable {
  subscription_id: string;
  plan_id: string;
  account_id: string;
  email: string | null;
  amount: number;
  currency: string;
  credits: number;
  /** 'pending' until Stripe's subscription is known, then Stripe's own status. */
  status: Defaulted<string>;
  /** The Checkout Session POST /api/subscriptions opened, stored when Stripe answered. */
  checkout_session_id: string | null;
  /** The link: set once, by that session's checkout.session.completed (subscription-links.ts). */
  stripe_subscription_id: string | null;
  /** The customer that session made, stored with the link: whom a meter event bills (sql/billing/0040). */
  stripe_customer_id: Defaulted<string | null>;
  current_period_end: Date | null;
  cancel_at_period_end: Defaulted<boolean>;
  /** Stripe's pause_collection.behavior while collection is paused; null while it collects. */
  pause_behavior: string | null;
  pause_resumes_at: Date | null;
  stripe_state_at: Date | null;
  created_at: Defaulted<Date>;
  updated_at: Defaulted<Date>;
}

export interface InvoiceGrantsTable {
  invoice_id: string;
  subscription_id: string;
  account_id: string;
  credits: number;
  amount_paid: number;
  currency: string;
  billing_reason: string;
  event_id: string;
  granted_at: Defaulted<Date>;
  refunded_amount: Defaulted<number>;
  revocation_target: Defaulted<number>;
  revoked_credits: Defaulted<number>;
}

export interface InvoicePaymentsTable {
  payment_intent_id: string;
  invoice_id: string;
  linked_at: Defaulted<Date>;
}

// A type, not an interface: Kysely's withTables wants a record type.
export type BillingTables = {
  plans: PlansTable;
  /** Written by subscriptions.ts (created, its Checkout Session stored), subscription-links.ts (linked) and subscription-state.ts (Stripe's state) only. */
  subscriptions: SubscriptionsTable;
  /** Written by invoice-paid.ts (grants), invoice-refunds.ts (refunds) and invoice-disputes.ts (disputes) only. */
  invoice_grants: InvoiceGrantsTable;
  invoice_payments: InvoicePaymentsTable;
};

export type BillingDatabase = Database & BillingTables;
export type PlanRow = Selectable<PlansTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type InvoiceGrantRow = Selectable<InvoiceGrantsTable>;

/** The same connection or transaction, typed with this module's tables too. */
export function withBillingTables(db: Transaction<Database>): Transaction<BillingDatabase>;
export function withBillingTables(db: Kysely<Database>): Kysely<BillingDatabase>;
export function withBillingTables(db: Kysely<Database>): Kysely<BillingDatabase> {
  return db.withTables<BillingTables>();
}
