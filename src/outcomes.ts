// How handling an event ends, named once for every floor: the outcome a finished event is stored
// with, the two errors that name the other endings (give up now, wait for something), and the
// walk down an error's causes that a failure's stored reason is read from. Like River's rivertype,
// this file imports nothing, so src/db/, src/stripe/ and the fulfilment loop can all stand on it
// without one reaching up into another (test/architecture/ground-floor.test.ts keeps it a leaf).

/**
 * How a handled event ends. An 'ignored' event may say why, and a 'processed' one what it did when
 * an operator may wonder (kept in last_error, shown to ops).
 */
export type FinishOutcome = { status: 'processed'; reason?: string } | { status: 'ignored'; reason?: string } | { status: 'duplicate'; duplicateOf: string };

/**
 * Retrying can never make this event succeed (an unknown order, an amount mismatch, a payload
 * that will never parse): it ends 'failed' at once with this message, a dead letter to replay
 * after fixing the cause.
 */
export class PermanentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/**
 * The event depends on something that has not happened yet (a refund before the payment it
 * refunds was fulfilled, a subscription's event before the checkout that links it): the event is
 * parked, spends no attempt, and runs again as soon as what it waits for commits (src/events/
 * event-waits.ts). Thrown before the handler writes anything: where several modules handle the
 * type, another module's outcome wins over a RetryLaterError (docs/handlers.md).
 *
 * `waitsFor`: the keys that wake it (e.g. `payment_intent:pi_…`); the module that writes what a
 * key stands for wakes it with wakeWaiting. Before the read that decided to wait, the handler
 * took the keys' locks with lockWaitKeys, or a wake could slip in between.
 * `ignoreWhenExhausted`: what the event waits for may never come (a dispute of a payment that may
 * not be ours); when the wait gives up it ends 'ignored' with this message, not 'failed'.
 */
export class RetryLaterError extends Error {
  readonly waitsFor: readonly string[];
  readonly ignoreWhenExhausted: boolean;

  constructor(message: string, options: { waitsFor: readonly string[]; ignoreWhenExhausted?: boolean }) {
    super(message);
    this.name = 'RetryLaterError';
    this.waitsFor = options.waitsFor;
    this.ignoreWhenExhausted = options.ignoreWhenExhausted ?? false;
  }
}

// An error and the causes it wraps (`new Error('…', { cause })`), walked in one place: for the
// messages stored and printed, and for classifying what went wrong underneath (src/db/pg-errors.ts).

/** The error, then each cause in turn, outermost first; at most `max` of them. */
export function errorChain(error: unknown, max = 10): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = error; e !== undefined && chain.length < max; e = e instanceof Error ? e.cause : undefined) chain.push(e);
  return chain;
}

/** The messages of the chain joined with ': ', the root cause last. */
export function describeError(error: unknown, max = 5): string {
  return errorChain(error, max)
    .map((e) => (e instanceof Error ? e.message : typeof e === 'string' ? e : JSON.stringify(e)))
    .join(': ');
}
