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
