// Times a process draining a backlog: polls the remaining count every POLL_MS from the moment the
// process is launched (work may start before it announces itself) until it reaches zero; then,
// with the process still running, the work the drain leaves behind (`then`: the outbox's
// deliveries) until that is zero too.
// The rate counts only what was done between the first poll that saw progress and the poll that
// saw zero, so start-up time (tsx, migrations, connections) is not in it; the quantisation
// is one poll at the end, ± POLL_MS.
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchChild } from './processes.js';

const POLL_MS = 100;

export interface DrainTiming<W> {
  /** Items per second between the first progress seen and the end; NaN if too fast to see. */
  rate: number;
  /** What `rate` divides: the items left at the first progress and the seconds until none was. Rounds sum them. */
  counted: { items: number; seconds: number };
  /** Seconds from launch to empty, start-up included. */
  wallSeconds: number;
  /** With `then`: when it was empty too, in seconds from the first progress (as `counted`) and from launch. */
  then?: { seconds: number; wallSeconds: number };
  /** With `window`: what it measured. */
  window?: W;
}

export interface DrainOptions<W> {
  timeoutMs: number;
  /** What is left of the work the drain leaves behind, polled once the backlog is empty. */
  then?: () => Promise<number>;
  /** Opened just before the launch, stopped with the process when everything is done, before it stops: a CPU window, say. */
  window?: () => Promise<{ stop(child: BenchChild): Promise<W> }>;
}

export async function timeDrain<W = never>(
  start: () => Promise<BenchChild>,
  remaining: () => Promise<number>,
  total: number,
  options: DrainOptions<W>,
): Promise<DrainTiming<W>> {
  const window = await options.window?.();
  const launched = performance.now();
  let startError: Error | undefined;
  const child = start().catch((error: unknown) => {
    startError = error instanceof Error ? error : new Error(String(error));
    return undefined;
  });
  /** Polls `count` until it is zero; resolves with the time of the poll that saw zero. */
  const untilZero = async (count: () => Promise<number>, what: string, seen: (left: number, t: number) => void = () => {}): Promise<number> => {
    for (;;) {
      const left = await count();
      const t = performance.now();
      if (startError !== undefined) throw startError;
      if (left === 0) return t;
      seen(left, t);
      if (t - launched > options.timeoutMs) throw new Error(`${left} ${what} still left after ${options.timeoutMs / 1000} s`);
      await sleep(POLL_MS);
    }
  };
  try {
    const progress: { first?: { t: number; left: number } } = {};
    const emptied = await untilZero(remaining, `of ${total}`, (left, t) => {
      if (!progress.first && left < total) progress.first = { t, left };
    });
    const { first } = progress;
    const counted = first && first.left > 0 ? { items: first.left, seconds: (emptied - first.t) / 1000 } : { items: 0, seconds: 0 };
    const thenEmptied = options.then && (await untilZero(options.then, 'of the work left behind'));
    const ready = await child;
    const measured = ready && (await window?.stop(ready));
    return {
      rate: counted.items > 0 ? counted.items / counted.seconds : Number.NaN,
      counted,
      wallSeconds: (emptied - launched) / 1000,
      ...(thenEmptied !== undefined && {
        then: { seconds: first ? (thenEmptied - first.t) / 1000 : Number.NaN, wallSeconds: (thenEmptied - launched) / 1000 },
      }),
      ...(measured && { window: measured }),
    };
  } finally {
    await (await child)?.stop();
  }
}
