// The whole-number options of the ops scripts, checked one way: digits only (not `1e3`, ` 12`
// or an empty string, which Number() would take), within a range, and an error that names the
// flag, the range and an example.
import { z } from 'zod';
import { UsageError } from './script.js';

export interface WholeNumberRange {
  min: number;
  max?: number;
  example: string;
  /** Appended to the error, e.g. why the minimum is what it is. */
  reason?: string;
}

export function wholeNumberOption(value: unknown, flag: string, { min, max = Number.MAX_SAFE_INTEGER, example, reason }: WholeNumberRange): number {
  const parsed = z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number)
    .pipe(z.number().min(min).max(max))
    .safeParse(value);
  if (parsed.success) return parsed.data;
  const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
  throw new UsageError(`${flag} must be a whole number ${range}, e.g. ${flag} ${example}${reason ? `: ${reason}` : ''}`);
}
