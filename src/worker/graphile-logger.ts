// Routes graphile-worker's log calls into our pino logger so one process writes one log format.
// Its 'info' lines (one per completed job, on top of ours) go to debug.
import { Logger as GraphileLogger, type LogLevel } from 'graphile-worker';
import type { Logger } from '../logger.js';

export function graphileLogger(logger: Logger): GraphileLogger {
  const base = logger.child({ component: 'graphile-worker' });
  return new GraphileLogger((scope) => (level: LogLevel, message: string, meta?: unknown) => {
    const name = String(level);
    const method = name === 'warning' ? 'warn' : name === 'error' ? 'error' : 'debug';
    // Checked first: graphile-worker logs every job, and most of it is dropped at info.
    if (!base.isLevelEnabled(method)) return;
    base[method]({ ...scope, ...(typeof meta === 'object' && meta !== null ? { meta } : {}) }, message);
  });
}
