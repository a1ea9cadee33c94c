// Durations on the command line read like 30m, 1h, 3d; also 45s and 2w.
import { UsageError } from './script.js';

const UNITS_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
/** Further back than any event: past it the instant would leave Postgres' range, not say more. */
const MAX_SINCE_DAYS = 36_500;

export interface SinceRange {
  /** Longest duration accepted; a century by default. */
  maxDays?: number;
  example: string;
  /** Appended to the error when the duration is too long, e.g. why the maximum is what it is. */
  reason?: string;
}

/** The instant `<flag> <duration>` names, now minus the duration; a usage error naming the flag otherwise. */
export function sinceOption(value: unknown, flag: string, { maxDays = MAX_SINCE_DAYS, example, reason }: SinceRange): Date {
  const match = typeof value === 'string' ? /^(\d{1,6})([smhdw])$/.exec(value.trim()) : null;
  if (!match) throw new UsageError(`${flag} must be a duration like 30m, 24h or 7d, e.g. ${flag} ${example}`);
  const ms = Number(match[1]) * UNITS_MS[match[2]!]!;
  if (ms > maxDays * UNITS_MS.d!) throw new UsageError(`${flag} can be at most ${maxDays}d${reason ? `: ${reason}` : ''}`);
  return new Date(Date.now() - ms);
}
