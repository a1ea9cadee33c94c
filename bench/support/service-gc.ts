// A service process's garbage collections over a window, from its own GET /metrics (prom-client's
// nodejs_gc_duration_seconds, which node's perf_hooks feed): how many full and young-generation
// collections, and how long they paused the main thread. The marking V8's helper threads do beside
// the main thread is not in it; it shows in the process's CPU. Counts, unlike times, do not move
// with the host: the rate of full collections is what the heap settings trade against memory
// (docs/benchmarks.md, "Tried and not kept").

export interface GcCounts {
  /** Mark-compact collections, each marking the whole heap again. */
  full: number;
  /** Scavenges of the young generation. */
  young: number;
  /** Seconds the main thread stood in collections of any kind. */
  pauseSeconds: number;
}

const SERIES = /^stripe_inbox_nodejs_gc_duration_seconds_(count|sum)\{kind="(\w+)"\} (\S+)$/gm;

async function gcSoFar(url: string, token: string): Promise<GcCounts | undefined> {
  try {
    const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    if (!response.ok) return undefined;
    const counts: GcCounts = { full: 0, young: 0, pauseSeconds: 0 };
    let found = false;
    for (const [, series, kind, value] of (await response.text()).matchAll(SERIES)) {
      found = true;
      if (series === 'sum') counts.pauseSeconds += Number(value);
      else if (kind === 'major') counts.full += Number(value);
      else if (kind === 'minor') counts.young += Number(value);
    }
    // No series (a renamed metric, default metrics off): unknown, not zero collections.
    return found ? counts : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a window; stop() returns the collections in it, or undefined where /metrics did not answer. */
export async function gcWindow(url: string, token: string): Promise<{ stop(): Promise<GcCounts | undefined> }> {
  const before = await gcSoFar(url, token);
  return {
    async stop() {
      const after = await gcSoFar(url, token);
      if (!before || !after) return undefined;
      return { full: after.full - before.full, young: after.young - before.young, pauseSeconds: after.pauseSeconds - before.pauseSeconds };
    },
  };
}
