// Hands V8's young generation back to the operating system when the service has nothing to do:
// once it has started, and after each busy spell once it has been quiet for a while.
//
// Why: a burst of webhooks (and, at start, loading the code) grows the young generation to its
// maximum (--max-semi-space-size, about twice that resident), and V8 shrinks it only in its
// memory reducer. That never runs in this service: the reducer waits for an allocation rate that
// graphile-worker's polling and the sweep's schedule stay above (--trace-memory-reducer says "high
// alloc" every 8 s, for as long as the process lives), so a container would keep the memory of its
// busiest moment through every quiet hour after it.
//
// Needs the gc function that --expose-gc gives (the image's NODE_OPTIONS sets it); without it this
// does nothing. Each trim is a full collection that pauses the process for some tens of
// milliseconds, taken only when the process is quiet and the young generation has grown.
import v8 from 'node:v8';

export interface HeapTrimOptions {
  /** How often to look; a trim comes at least this long after the last busy moment. */
  intervalMs?: number;
  /** Allocated over one interval, at most, for the process to count as quiet: above what the idle service allocates (polling, schedules), below a trickle of webhooks. */
  quietBytes?: number;
  /** The young generation's size, at least, for a trim to be worth its pause (a trim leaves it at V8's minimum). */
  grownBytes?: number;
}

const MB = 2 ** 20;

/** True when the process can trim (it runs with --expose-gc): it then trims now and whenever it goes quiet after work. */
export function startHeapTrimming({ intervalMs = 10_000, quietBytes = 16 * MB, grownBytes = 4 * MB }: HeapTrimOptions = {}): boolean {
  const gc = globalThis.gc;
  if (typeof gc !== 'function') return false;
  // 'last-resort': collect until nothing more is freed, shrinking the young generation as it goes
  // (a regular major collection leaves its size as it is).
  const trim = () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  trim();
  let allocated = v8.getHeapStatistics().total_allocated_bytes;
  setInterval(() => {
    const now = v8.getHeapStatistics().total_allocated_bytes;
    const quiet = now - allocated <= quietBytes;
    allocated = now;
    if (quiet && youngGenerationBytes() >= grownBytes) {
      trim();
      allocated = v8.getHeapStatistics().total_allocated_bytes;
    }
  }, intervalMs).unref();
  return true;
}

function youngGenerationBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.physical_space_size ?? 0;
}
