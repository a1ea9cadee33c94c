// Retry and give up are different, named outcomes. A PermanentError can never succeed on retry
// (unknown order, amount mismatch, a payload that will never parse): the event ends 'failed' at
// once with this message. Any other error is transient and retried with backoff.
import type { StripeEventRow } from '../db/schema.js';
import { describeError } from '../error-chain.js';

export class PermanentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/**
 * The event depends on something that has not happened yet (a refund before the payment it
 * refunds was fulfilled): retried later with backoff, like any transient error, never dropped.
 */
export class RetryLaterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RetryLaterError';
  }
}

/**
 * A handler's failure, attributed to its event: carried out of the fulfilment transaction so the
 * rollback happens first, then counted against that event alone (fulfil-event.ts).
 */
export class HandlerFailed extends Error {
  constructor(
    readonly event: StripeEventRow,
    readonly error: unknown,
  ) {
    super(describeError(error), { cause: error });
    this.name = 'HandlerFailed';
  }
}

