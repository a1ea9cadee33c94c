// Outbound Idempotency-Keys (docs/design.md, invariant 9) are derived from the business object,
// never from the delivery or at random: every retry, from any process, of the same operation on the
// same order sends the same key, so Stripe creates one object.
export const checkoutSessionKey = (orderId: string) => `checkout-session:${orderId}`;

/**
 * The n-th refund ops asked for on an order. The sequence number tells a second partial refund
 * from a retry of the first: a retry carries the caller's same Idempotency-Key, hence the same n.
 */
export const refundKey = (orderId: string, seq: number) => `refund:${orderId}:${seq}`;
