// Structured JSON logs (pino). Secrets, signatures and payloads are never logged: log event ids,
// types and outcomes only. The redact list is a second line of defence, not the first.
import { pino } from 'pino';

export type Logger = pino.Logger;

/** `fd` 2 for scripts: their stdout is their result (text or --json), logs go to stderr. */
export function createLogger(level: string, fd: 1 | 2 = 1): Logger {
  return pino(
    {
      level,
      base: { service: 'stripe-inbox' },
      redact: { paths: ['*.authorization', '*["stripe-signature"]', '*.secret', '*.token'], censor: '[redacted]' },
    },
    pino.destination(fd),
  );
}

/**
 * Logs an unhandled rejection instead of letting Node end the process. graphile-worker 0.17 leaves
 * one unhandled when Postgres goes away while it fails jobs back (batchFailJobs): crashing on it
 * would turn a database outage into a restart loop. Every invariant is held by the database, so
 * carrying on is safe; the log line (error level) keeps it visible.
 */
export function logUnhandledRejections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection; the process keeps running'));
}
