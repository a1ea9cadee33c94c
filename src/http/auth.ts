// Bearer-token guard for /api, /admin/api and /metrics. Tokens are compared as SHA-256 digests
// with timingSafeEqual: constant time whatever the length or content of the guess.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Constant-time equality of a presented secret and the expected one. */
export const secretsEqual = (presented: string, expected: string) => timingSafeEqual(digest(presented), digest(expected));

// RFC 7235: the scheme name is case-insensitive and followed by one or more spaces.
const BEARER = /^bearer +(\S+)$/i;

/** Whether a request's Authorization header carries `token` as its bearer token. */
export function hasBearer(req: Request, token: string): boolean {
  const header = req.headers.authorization;
  const presented = typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
  return presented !== undefined && secretsEqual(presented, token);
}

export function refuseUnauthenticated(res: Response, realm: string): void {
  res
    .set('WWW-Authenticate', `Bearer realm="${realm}"`)
    .status(401)
    .json({ error: `missing or wrong bearer token for ${realm}` });
}

/**
 * `limitFailures` (see rate-limits.ts) is consulted for a refused request only: it calls next to
 * let the 401 go out, or answers 429 itself. A client with the right token never touches it.
 */
export function requireBearer(token: string, realm: string, limitFailures?: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (hasBearer(req, token)) return next();
    if (!limitFailures) return refuseUnauthenticated(res, realm);
    void limitFailures(req, res, (failure?: unknown) => (failure ? next(failure) : refuseUnauthenticated(res, realm)));
  };
}
