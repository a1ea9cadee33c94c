// Small numeric helpers and the RSS sampler.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Nearest-rank percentile of unsorted values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const mean = (values: readonly number[]) => (values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length);

/** Kilobytes of a /proc/<pid>/status field (VmRSS: now, VmHWM: the peak so far), or undefined once the process is gone. */
export function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Kilobytes of a /proc/<pid>/status field summed over a server's processes (gone ones count 0). */
export function summedKb(pids: readonly number[], field: 'VmRSS' | 'VmHWM'): number {
  return pids.reduce((total, pid) => total + (statusKb(pid, field) ?? 0), 0);
}

/**
 * Samples the resident set of a server's processes (summed) every `intervalMs` until stopped.
 * The peak reported is the larger of the sampled maximum and the sum of the kernel's own
 * high-water marks (VmHWM), which also covers spikes between samples (and start-up, which is not
 * part of the run: say so). Summed RSS counts the pages two processes of one binary share twice;
 * a container's memory counts them once.
 */
export function sampleRss(pids: readonly number[], intervalMs = 100): { stop(): { startMb: number; peakMb: number; hwmMb: number } } {
  const startKb = summedKb(pids, 'VmRSS');
  let peakKb = startKb;
  // unref: a run that fails before stop() must still let the bench exit.
  const timer = setInterval(() => (peakKb = Math.max(peakKb, summedKb(pids, 'VmRSS'))), intervalMs).unref();
  return {
    stop() {
      clearInterval(timer);
      const hwmKb = summedKb(pids, 'VmHWM');
      return { startMb: startKb / 1024, peakMb: Math.max(peakKb, summedKb(pids, 'VmRSS')) / 1024, hwmMb: hwmKb / 1024 };
    },
  };
}

// Linux's USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every mainstream kernel.
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process has used so far, or NaN once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds a server's processes have used so far, summed. */
export const summedCpuSeconds = (pids: readonly number[]) => pids.reduce((total, pid) => total + cpuSeconds(pid), 0);

/**
 * Read and write system calls a process (all its threads) has made so far, from /proc/<pid>/io,
 * or NaN once it is gone. Counted by the kernel, so they do not move with the host's speed.
 */
export function systemCalls(pid: number): { reads: number; writes: number } {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
    return { reads: field('syscr'), writes: field('syscw') };
  } catch {
    return { reads: Number.NaN, writes: Number.NaN };
  }
}

/** Polls until `probe` returns true, at most `timeoutMs`; throws with `what` when it never does. */
export async function pollUntil(
  what: string,
  probe: () => Promise<boolean>,
  { timeoutMs, intervalMs }: { timeoutMs: number; intervalMs: number },
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
