// Postgres errors classified by SQLSTATE in one place, so callers decide "retry later" or
// "answer 503" without string matching.
import { errorChain } from '../outcomes.js';
import { PoolBusyError } from './pools.js';

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** True when every connection of one of our pools was busy: a load problem, not the database's. */
export function isPoolBusy(error: unknown): boolean {
  return errorChain(error).some((e) => e instanceof PoolBusyError);
}

/** True when the database cannot be reached or is going away: the caller should answer 503. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (isPoolBusy(error)) return false;
  for (const e of errorChain(error)) {
    if (!(e instanceof Error)) continue;
    const code = codeOf(e);
    if (code !== undefined) {
      if (CONNECTION_CODES.has(code)) return true;
      // Class 08: connection exception; 57P01-57P03: admin/crash shutdown, cannot connect now;
      // 53300: too many connections; 57014: statement timeout (a database too slow to answer);
      // 25006: read-only transaction, i.e. a standby: a primary being demoted by a switchover or
      // a failover, until the proxy moves the connection to the new leader.
      if (code.startsWith('08') || ['57P01', '57P02', '57P03', '53300', '57014', '55P03', '25006'].includes(code)) return true;
    }
    // pg reports pool and connect timeouts as plain Errors without a code.
    if (/timeout exceeded when trying to connect|Connection terminated/i.test(e.message)) return true;
  }
  return false;
}

/**
 * True when Postgres rolled the transaction back to break a lock cycle or a serialization conflict
 * (SQLSTATE 40P01 deadlock_detected, 40001 serialization_failure): the other side has gone on, and
 * the same work run again at once nearly always succeeds.
 */
export function isTransactionConflict(error: unknown): boolean {
  return errorChain(error).some((e) => ['40P01', '40001'].includes(codeOf(e) ?? ''));
}

/** True when a unique constraint (`constraint`, by name) refused a write: SQLSTATE 23505. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  return errorChain(error).some((e) => codeOf(e) === '23505' && (e as { constraint?: unknown }).constraint === constraint);
}

/** True when the role lacks a privilege the statement needs (SQLSTATE 42501): a provider may revoke grants Postgres gives every role. */
export function isInsufficientPrivilege(error: unknown): boolean {
  return errorChain(error).some((e) => codeOf(e) === '42501');
}

/**
 * True when a number outgrew its column or type (SQLSTATE 22003, numeric_value_out_of_range): a
 * grant past what an integer balance holds. The same write fails the same way on every attempt.
 */
export function isNumericValueOutOfRange(error: unknown): boolean {
  return errorChain(error).some((e) => codeOf(e) === '22003');
}
