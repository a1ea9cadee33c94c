-- 0043 (credits module): the pending orders opened lately, by when. A summary of entitlements for
-- a Stripe customer not linked yet asks whether a Checkout Session that may still link one is
-- open (src/modules/credits/orders.ts, customerCheckoutOpenSince); abandoned checkouts stay
-- pending for good, so without this it would read every one ever opened. Partial: only pending
-- orders with a session, a small part of the table once a shop has sold for a while.
create index orders_pending_opened_idx on orders (created_at) where status = 'pending' and checkout_session_id is not null;
