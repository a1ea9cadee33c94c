// What each part returns and how it is printed: one row per figure, the issue's target (if it
// has one) beside it, and whether this run met it. CI checks that the parts run, not the rows.
export interface Target {
  op: '≥' | '≤' | '<';
  value: number;
}

export interface Figure {
  part: string;
  name: string;
  value: number;
  unit: string;
  /** Shown instead of the number (e.g. yes/no). */
  display?: string;
  target?: Target;
  note?: string;
}

export function met(figure: Figure): boolean | undefined {
  const { target, value } = figure;
  if (!target || Number.isNaN(value)) return undefined;
  if (target.op === '≥') return value >= target.value;
  if (target.op === '≤') return value <= target.value;
  return value < target.value;
}

export function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'n/a';
  const abs = Math.abs(value);
  const digits = Number.isInteger(value) || abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function row(figure: Figure): string[] {
  const target = figure.target ? `${figure.target.op} ${figure.target.value}` : '';
  const ok = met(figure);
  return [
    figure.part,
    figure.name,
    figure.display ?? `${formatNumber(figure.value)}${figure.unit ? ` ${figure.unit}` : ''}`,
    target ? `(target ${target})` : '',
    ok === undefined ? '' : ok ? 'met' : 'MISSED',
    figure.note ?? '',
  ];
}

export function formatTable(figures: readonly Figure[]): string {
  const rows = [['part', 'figure', 'value', 'target', '', 'note'], ...figures.map(row)];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  // The value column is right-aligned so magnitudes line up.
  return rows
    .map((r) =>
      r
        .map((cell, c) => (c === 2 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export const ratio = (a: number, b: number) => (b > 0 ? a / b : Number.NaN);
