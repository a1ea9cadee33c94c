// What a package or plan is made of, checked at the edge (the admin API, npm run catalog) with
// errors that name the field; the tables' CHECK constraints hold the same rules again, but for
// MAX_CREDITS (what the balances can hold, see there).
import { z } from 'zod';
import { postgresText } from '../../business-module.js';

/**
 * The currencies Stripe accepts for a charge (docs.stripe.com/currencies), lower case as Stripe
 * writes them. Amounts are in each one's minor unit, as Stripe counts them (4900 = CHF 49.00; a
 * zero-decimal currency such as JPY counts whole yen).
 */
const STRIPE_CURRENCIES = new Set(
  `
  usd aed afn all amd ang aoa ars aud awg azn bam bbd bdt bgn bhd bif bmd bnd bob brl bsd bwp byn bzd cad cdf chf clp
  cny cop crc cve czk djf dkk dop dzd egp etb eur fjd fkp gbp gel gip gmd gnf gtq gyd hkd hnl htg huf idr ils inr isk
  jmd jod jpy kes kgs khr kmf krw kwd kyd kzt lak lbp lkr lrd lsl mad mdl mga mkd mmk mnt mop mur mvr mwk mxn myr mzn
  nad ngn nio nok npr nzd omr pab pen pgk php pkr pln pyg qar ron rsd rub rwf sar sbd scr sek sgd shp sle sos srd std
  szl thb tjs tnd top try ttd twd tzs uah ugx uyu uzs vnd vuv wst xaf xcd xof xpf yer zar zmw`
    .trim()
    .split(/\s+/),
);

/** The id the selling application names it by: as packages_id_shape and plans_id_shape check it. */
export const catalogId = z.string().regex(/^[a-z0-9_-]{1,64}$/, 'must be 1-64 characters of a-z, 0-9, _ and -');
/**
 * The most credits a package, or a plan's period, grants. An account's balance
 * (account_credits.granted) is a Postgres integer, at most 2,147,483,647: this leaves room for
 * 2,147 of the largest packages on one account. A grant that would still not fit (or one from a
 * row forged past this bound in SQL) ends its event 'failed' at once, numeric_value_out_of_range.
 */
const MAX_CREDITS = 1_000_000;
// Postgres' integer: a larger amount or count would be refused by the column, as a 500.
const integerFrom = (min: number, what: string, max = 2_147_483_647) =>
  z
    .number({ error: `must be ${what}` })
    .int(`must be ${what}`)
    .min(min, `must be ${what}`)
    .max(max, `must be ${what} of at most ${max}`);
const positiveInteger = (what: string, max?: number) => integerFrom(1, what, max);
const catalogName = postgresText.trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const stripePriceId = z.string().regex(/^price_[A-Za-z0-9_]{1,250}$/, 'must be a Stripe Price id (price_…)');

// A Stripe Feature's lookup_key: at most 80 characters, Stripe says.
const featureKey = z.string().regex(/^[\x21-\x7e]{1,80}$/, 'must be Stripe Feature lookup keys: 1-80 printable ASCII characters each, no spaces');
const MAX_FEATURES = 100;
const features = z
  .array(featureKey, { error: 'must be a list of Stripe Feature lookup keys' })
  .max(MAX_FEATURES, `must name at most ${MAX_FEATURES} features`)
  .refine((keys) => new Set(keys).size === keys.length, 'must name each feature once')
  .default([]);

/** What every package and plan has: POST /admin/api/packages takes exactly these. */
export const catalogFields = {
  id: catalogId,
  name: catalogName,
  amount: positiveInteger("a positive integer in the currency's minor unit (4900 = 49.00)"),
  currency: z
    .string()
    .transform((c) => c.toLowerCase())
    .refine((c) => STRIPE_CURRENCIES.has(c), 'must be an ISO currency code Stripe accepts (chf, eur, usd, …)'),
  credits: positiveInteger('a positive integer', MAX_CREDITS),
  stripe_price_id: stripePriceId.optional(),
  /** The Stripe Features (lookup keys) it grants, as attached to its Product at Stripe: shown in the catalog. */
  features,
};

/** A plan's credits may be 0 where its kind allows it (a usage-billed plan: src/modules/billing/plan-catalog.ts). */
export const creditsOrNone = integerFrom(0, 'a whole number', MAX_CREDITS);

export const PLAN_INTERVALS = ['day', 'week', 'month', 'year'] as const;
export type PlanInterval = (typeof PLAN_INTERVALS)[number];
/** Stripe's bound, as plans_interval_count_range checks it: at most three years between two invoices. */
const MAX_INTERVAL_COUNT: Readonly<Record<PlanInterval, number>> = { day: 1095, week: 156, month: 36, year: 3 };

/** A plan's billing period, checked together: interval_count is bounded by the interval. */
export const planPeriodFields = {
  interval: z.enum(PLAN_INTERVALS, { error: `must be one of ${PLAN_INTERVALS.join(', ')}` }),
  interval_count: positiveInteger('a positive integer').default(1),
};
export const checkPlanPeriod = (plan: { interval: PlanInterval; interval_count: number }, ctx: z.RefinementCtx) => {
  const max = MAX_INTERVAL_COUNT[plan.interval];
  if (plan.interval_count > max)
    ctx.addIssue({
      code: 'custom',
      path: ['interval_count'],
      message: `must be at most ${max} for interval ${plan.interval} (Stripe bills at least every three years)`,
    });
};

/** What PATCH may change: the rest never changes in place. */
export const catalogChange = z.strictObject({ name: catalogName.optional(), active: z.boolean({ error: 'must be true or false' }).optional() });
/** What PATCH refuses with 409 rather than 400: fields that exist, but never change in place. */
// features too: a package's decide what its checkout asks Stripe (customer_creation), which a
// retry under the same outbound Idempotency-Key must not change.
export const FIXED_FIELDS = ['id', 'amount', 'currency', 'credits', 'stripe_price_id', 'features', 'interval', 'interval_count', 'meter_event_name'] as const;
