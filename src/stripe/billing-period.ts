// Where a Stripe billing period ends: `interval_count` intervals after its start, by the calendar
// in UTC, as Stripe bills (https://docs.stripe.com/billing/subscriptions/billing-cycle): a monthly
// subscription started on 31 January renews on the last day of February, then on 31 March.
// For the samples `npm run send-event` and the offline stand-in make; the service reads the
// period from Stripe's objects and never computes one.

export type BillingInterval = 'day' | 'week' | 'month' | 'year';

/** The end of the period that starts at `start` (Unix seconds), in Unix seconds. */
export function billingPeriodEnd(start: number, interval: BillingInterval, count = 1): number {
  const at = new Date(start * 1000);
  if (interval === 'day' || interval === 'week') {
    at.setUTCDate(at.getUTCDate() + count * (interval === 'week' ? 7 : 1));
    return at.getTime() / 1000;
  }
  const months = count * (interval === 'year' ? 12 : 1);
  const day = at.getUTCDate();
  // The anchor's day, or the month's last when it has fewer days (Date would roll over into the next).
  at.setUTCDate(1);
  at.setUTCMonth(at.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 0)).getUTCDate();
  at.setUTCDate(Math.min(day, lastDay));
  return at.getTime() / 1000;
}
