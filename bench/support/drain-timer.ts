// Times a process draining a backlog: polls the remaining count every POLL_MS from the moment the
// process is launched (work may start before it announces itself) until it reaches zero.
// The rate counts only what was done between the first poll that saw progress and the poll that
// saw zero, so start-up time (tsx, migrations, connections) is not in it; the quantisation
// is one poll at the end, ± POLL_MS.
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchChild } from './processes.js';

const POLL_MS = 100;

export interface DrainTiming {
  /** Items per second between the first progress seen and the end; NaN if too fast to see. */
  rate: number;
  /** Seconds from launch to empty, start-up included. */
  wallSeconds: number;
}

export async function timeDrain(start: () => Promise<BenchChild>, remaining: () => Promise<number>, total: number, timeoutMs: number): Promise<DrainTiming> {
  const launched = performance.now();
  let startError: Error | undefined;
  const child = start().catch((error: unknown) => {
    startError = error instanceof Error ? error : new Error(String(error));
    return undefined;
  });
  try {
    let first: { t: number; left: number } | undefined;
    for (;;) {
      const left = await remaining();
      const t = performance.now();
      if (startError !== undefined) throw startError;
      if (left === 0) {
        const rate = first && first.left > 0 ? first.left / ((t - first.t) / 1000) : Number.NaN;
        return { rate, wallSeconds: (t - launched) / 1000 };
      }
      if (!first && left < total) first = { t, left };
      if (t - launched > timeoutMs) throw new Error(`${left} of ${total} still left after ${timeoutMs / 1000} s`);
      await sleep(POLL_MS);
    }
  } finally {
    await (await child)?.stop();
  }
}
