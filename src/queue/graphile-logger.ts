// Routes graphile-worker's log calls into our pino logger so one process writes one log format.
// Its 'info' lines (one per completed job, on top of ours) go to debug, and so does its error line
// for a batch job's retries (below): error is for what an operator must act on.
import { Logger as GraphileLogger, type LogLevel } from 'graphile-worker';
import type { Logger } from '../logger.js';

export function graphileLogger(logger: Logger): GraphileLogger {
  const base = logger.child({ component: 'graphile-worker' });
  return new GraphileLogger((scope) => (level: LogLevel, message: string, meta?: unknown) => {
    const name = String(level);
    const method = name === 'warning' ? 'warn' : name === 'error' && !isBatchRetry(meta) ? 'error' : 'debug';
    // Checked first: graphile-worker logs every job, and most of it is dropped at info.
    if (!base.isLevelEnabled(method)) return;
    base[method]({ ...scope, ...(typeof meta === 'object' && meta !== null ? { meta } : {}) }, message);
  });
}

/**
 * graphile-worker's `Failed task … Batch failures` line, with a stack, at error: the entries a
 * batch job's task returned rejected. Ours returns only the events it retries, each already logged
 * once by the task itself at warn with its own error (src/fulfilment/report-result.ts), so this
 * line repeats them and would page someone for a retry the service handles itself. A task that
 * throws (an unexpected exception, not a batch's list) still logs at error.
 */
function isBatchRetry(meta: unknown): boolean {
  if (typeof meta !== 'object' || meta === null || !('failure' in meta) || meta.failure !== true) return false;
  const error = 'error' in meta ? meta.error : undefined;
  // graphile-worker 0.18's wording (worker.js); test/quiet-logs.test.ts fails if a release changes it.
  return error instanceof Error && error.message.startsWith('Batch failures:');
}
