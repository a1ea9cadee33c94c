// Outbound Idempotency-Keys (DESIGN invariant 9) are derived from the business object, never
// from the delivery or at random: every retry, from any process, of the same operation on the
// same order sends the same key, so Stripe creates one object.
export const checkoutSessionKey = (orderId: string) => `checkout-session:${orderId}`;
