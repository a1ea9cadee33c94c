// Stripe's thin event types. A thin notification of a v1 resource is typed `v1.<snapshot type>`
// (`v1.checkout.session.completed`) and handled as that type, once fulfilment has fetched the
// object; v2 resources' types (`v2.core.event_destination.ping`) have no snapshot counterpart.

const V1_PREFIX = 'v1.';

export function isV1ThinType(type: string): boolean {
  return type.startsWith(V1_PREFIX);
}

/** Whether a stored event is a thin notification, by its type: snapshot types carry no version prefix. */
export function isThinType(type: string): boolean {
  return /^v\d+\./.test(type);
}

/** The snapshot event type a v1 thin type stands for: `v1.invoice.paid` → `invoice.paid`. */
export function snapshotTypeOf(type: string): string | undefined {
  return isV1ThinType(type) ? type.slice(V1_PREFIX.length) : undefined;
}
