// The baselines' side of bench/support/processes.ts: one JSON line saying "ready" (and where),
// and an exit when the bench's end of stdin closes, so a baseline never outlives a killed bench.
export function announceReady(fields: { url?: string } = {}): void {
  process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, ...fields })}\n`);
}

export function exitWithParent(stop: () => Promise<void>): void {
  let stopping = false;
  const end = () => {
    if (stopping) return;
    stopping = true;
    void stop().finally(() => process.exit(0));
  };
  process.stdin.on('end', end).on('close', end).resume();
  process.on('SIGTERM', end);
  process.on('SIGINT', end);
}

export function requiredEnvNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number, got ${raw}`);
  return value;
}
