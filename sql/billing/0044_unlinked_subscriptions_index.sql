-- 0044 (billing module): the subscriptions whose Checkout Session is open or not yet linked, by
-- when: what subscriptionCheckoutOpenSince (src/modules/billing/subscriptions.ts) reads for a
-- summary of entitlements whose customer is not linked yet, instead of every subscription.
create index subscriptions_unlinked_opened_idx on subscriptions (created_at)
  where checkout_session_id is not null and stripe_subscription_id is null;
