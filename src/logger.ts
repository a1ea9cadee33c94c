// Structured JSON logs (pino). Secrets, signatures and payloads are never logged: log event ids,
// types and outcomes only. redactSecrets is a second line of defence, not the first.
import { pino } from 'pino';

export type Logger = pino.Logger;

export interface LogDestination {
  /** 2 for scripts: their stdout is their result (text or --json), logs go to stderr. */
  fd?: 1 | 2;
  /**
   * false for the service: a line is handed to a write already in flight instead of costing its own
   * blocking write, so under load many lines share one write (one log line per request or event is
   * a measurable share of the service's CPU: docs/benchmarks.md, "What bounds each number"). pino
   * writes what is buffered when the process exits, also on process.exit(); only a SIGKILL or a
   * power cut can lose the last lines.
   */
  sync?: boolean;
  /**
   * Human-readable lines (pino-pretty, a development dependency) instead of JSON: for a person at
   * a terminal in development. Ignored where pino-pretty is not installed (the production image).
   */
  pretty?: boolean;
  /**
   * Fields added to every line: the service passes the active span's trace_id and span_id while
   * tracing is on (src/tracing/trace-context.ts), and nothing otherwise, so a line costs no lookup.
   */
  mixin?: () => object;
}

export function createLogger(level: string, { fd = 1, sync = true, pretty = false, mixin }: LogDestination = {}): Logger {
  const options = {
    level,
    base: { service: 'stripe-inbox' },
    // Not pino's own `redact` option: with a wildcard path it parses every path again for every
    // field of every line, and that garbage was the largest share of what the service allocated
    // under load (docs/speed.md). This does the same check on
    // each line's fields and allocates only when it censors. (A child logger's bindings are not
    // fields: ours are names set in code.)
    formatters: { log: redactSecrets },
    ...(mixin && { mixin }),
  };
  if (pretty && prettyAvailable()) {
    return pino(
      options,
      pino.transport({ target: 'pino-pretty', options: { destination: fd, ignore: 'pid,hostname,service', translateTime: 'SYS:HH:MM:ss.l' } }),
    );
  }
  return pino(options, pino.destination({ dest: fd, sync }));
}

/** Keys whose values never reach a log line, one level down: `{ err: { token } }`, `{ headers: { authorization } }`. */
const SECRET_KEYS = ['authorization', 'stripe-signature', 'secret', 'token'];
const CENSOR = '[redacted]';

/**
 * A log line's fields with the values of SECRET_KEYS censored in each field's object; the
 * same fields, not a copy, when there is nothing to censor. The caller's objects are never changed.
 */
export function redactSecrets(fields: Record<string, unknown>): Record<string, unknown> {
  let censored: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    if (typeof value !== 'object' || value === null || !SECRET_KEYS.some((secret) => Object.hasOwn(value, secret))) continue;
    (censored ??= { ...fields })[key] = censoredCopy(value);
  }
  return censored ?? fields;
}

/**
 * The object with its secrets censored: same prototype, every own property read into a plain
 * value, so an Error is still one to pino's serializer, with its message and stack (V8 keeps a
 * stack behind an accessor that only answers for the error it was captured on).
 */
function censoredCopy(value: object): object {
  const copy = Object.create(Object.getPrototypeOf(value) as object | null) as object;
  const keys = new Set<PropertyKey>(Reflect.ownKeys(value));
  if (value instanceof Error) keys.add('message').add('stack');
  for (const key of keys) {
    const enumerable = Object.getOwnPropertyDescriptor(value, key)?.enumerable ?? false;
    const own = SECRET_KEYS.includes(key as string) ? CENSOR : (value as Record<PropertyKey, unknown>)[key];
    Object.defineProperty(copy, key, { value: own, enumerable, writable: true, configurable: true });
  }
  return copy;
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
 * Logs an unhandled rejection instead of letting Node end the process. graphile-worker 0.18 calls
 * completeJob and failJob without awaiting them, so a connection lost while it completes or fails
 * a job back is one: crashing on it would turn a database outage into a restart loop. The job stays
 * locked: a completed one runs again when graphile-worker's 4-hour lock expires and finds its event
 * processed; a failed one's event is still 'processing', which the sweep reclaims. Every invariant
 * is held by the database, so carrying on is safe; the log line (error level) keeps it visible.
 */
export function logUnhandledRejections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection; the process keeps running'));
}
