// An error and the causes it wraps (`new Error('…', { cause })`), walked in one place: for the
// messages stored and printed, and for classifying what went wrong underneath.

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
