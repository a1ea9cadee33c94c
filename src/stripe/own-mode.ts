// Stripe answers a key with objects of its own mode only; an answer of the other mode (a proxy or a
// stand-in gone wrong, a key mislabelled by its prefix) must act no more than a delivered event of
// it would (src/fulfilment/dispatch.ts). Every object the service fetches to act on is checked here.

const modeOf = (value: unknown) => (typeof value === 'boolean' ? `${value ? 'live' : 'test'}-mode` : 'without a livemode');

/**
 * Why `what` (fetched from Stripe, its `livemode` given) cannot act in a service of `livemode`, or
 * undefined when it is of that mode. An object without a livemode cannot show it is ours.
 */
export function modeMismatch(what: string, fetchedLivemode: unknown, livemode: boolean): string | undefined {
  if (fetchedLivemode === livemode) return undefined;
  return `livemode mismatch: ${what} is ${modeOf(fetchedLivemode)}, this service is ${modeOf(livemode)}`;
}
