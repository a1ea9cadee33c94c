// Polls a condition until it holds or the deadline passes: a synchronisation, not a sleep.
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor<T>(
  description: string,
  probe: () => Promise<T | undefined | false | null>,
  { timeoutMs = 10_000, intervalMs = 25 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false && value !== null) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`, { cause: last });
    }
    await sleep(intervalMs);
  }
}
