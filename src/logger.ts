// Structured JSON logs (pino). Secrets, signatures and payloads are never logged: log event ids,
// types and outcomes only. The redact list is a second line of defence, not the first.
import { pino } from 'pino';

export type Logger = pino.Logger;

export interface LogDestination {
  /** 2 for scripts: their stdout is their result (text or --json), logs go to stderr. */
  fd?: 1 | 2;
  /**
   * false for the service: a line is handed to a write already in flight instead of costing its
   * own blocking write, so under load many lines share one write (one log line per request or
   * event is a measurable share of the service's CPU: docs/benchmarks.md). pino writes what is buffered when the process
   * exits, also on process.exit(); only a SIGKILL or a power cut can lose the last lines.
   */
  sync?: boolean;
  /**
   * Human-readable lines (pino-pretty, a development dependency) instead of JSON: for a person at
   * a terminal in development. Ignored where pino-pretty is not installed (the production image).
   */
  pretty?: boolean;
}

export function createLogger(level: string, { fd = 1, sync = true, pretty = false }: LogDestination = {}): Logger {
  const options = {
    level,
    base: { service: 'stripe-inbox' },
    redact: { paths: ['*.authorization', '*["stripe-signature"]', '*.secret', '*.token'], censor: '[redacted]' },
  };
  if (pretty && prettyAvailable()) {
    return pino(options, pino.transport({ target: 'pino-pretty', options: { destination: fd, ignore: 'pid,hostname,service', translateTime: 'SYS:HH:MM:ss.l' } }));
  }
  return pino(options, pino.destination({ dest: fd, sync }));
}

function prettyAvailable(): boolean {
  try {
    import.meta.resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * Logs an unhandled rejection instead of letting Node end the process. graphile-worker 0.18 leaves
 * one unhandled when Postgres goes away while it fails jobs back (batchFailJobs): crashing on it
 * would turn a database outage into a restart loop. Every invariant is held by the database, so
 * carrying on is safe; the log line (error level) keeps it visible.
 */
export function logUnhandledRejections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection; the process keeps running'));
}
