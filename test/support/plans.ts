// Reading auto_explain's plans (scripts/dev/explained-database.ts) in tests that hold a statement
// to the rows it may read, whatever plan Postgres picks for it.

/**
 * Rows of `table` that the plan's scans read, over all of their loops: those they returned and
 * those their filters then removed. (Postgres 18 prints its per-loop averages with decimals.)
 * Every plan node, the top one included, prints how it ran: `(actual …)` or `(never executed)`;
 * the lines in between belong to the node above them.
 */
export function rowsRead(plan: string, table: string): number {
  const scanOf = new RegExp(`Scan .*\\bon ${table}\\b.*actual [^)]*rows=([\\d.]+) loops=(\\d+)`);
  let read = 0;
  let loops = 0;
  for (const line of plan.split('\n')) {
    if (/\((?:actual |never executed)/.test(line)) {
      const scan = scanOf.exec(line);
      loops = scan ? Number(scan[2]) : 0;
      if (scan) read += Number(scan[1]) * loops;
      continue;
    }
    const removed = /Rows Removed by (?:Filter|Index Recheck): ([\d.]+)/.exec(line);
    if (removed) read += Number(removed[1]) * loops;
  }
  return read;
}
