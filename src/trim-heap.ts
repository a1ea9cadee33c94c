// Hands the young generation that start-up grew back to the operating system, once, when the
// service has started. Loading the code fills V8's young generation to its maximum
// (--max-semi-space-size, about twice that resident), and V8 shrinks it only in its memory
// reducer, which it starts after garbage collections under load: a service that starts and then
// waits for its first webhook would hold it for as long as it stays quiet. Needs the gc function
// that --expose-gc gives (the image's NODE_OPTIONS sets it); without it this does nothing.
// The collection pauses the process for some tens of milliseconds, once.

/** True when the heap was trimmed, false when the process runs without --expose-gc. */
export function trimHeapAfterStart(): boolean {
  if (typeof globalThis.gc !== 'function') return false;
  // 'last-resort': collect until nothing more is freed, shrinking the young generation as it goes
  // (a regular major collection leaves its size as it is).
  globalThis.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return true;
}
