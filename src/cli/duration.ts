// Durations on the command line read like 30m, 1h, 3d (DESIGN); also 45s and 2w.
const UNITS_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,6})([smhdw])$/.exec(text.trim());
  return match ? Number(match[1]) * UNITS_MS[match[2]!]! : undefined;
}
