// Bearer-token guard for /api and /admin/api. Tokens are compared as SHA-256 digests with
// timingSafeEqual: constant time whatever the length or content of the guess.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';

const digest = (value: string) => createHash('sha256').update(value).digest();
// RFC 7235: the scheme name is case-insensitive and followed by one or more spaces.
const BEARER = /^bearer +(\S+)$/i;

/** `orElse` may accept a request another way (the dashboard's session cookie). */
export function requireBearer(token: string, realm: string, orElse?: (req: Request) => boolean): RequestHandler {
  const expected = digest(token);
  return (req, res, next) => {
    const header = req.headers.authorization;
    const presented = typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
    if (presented !== undefined && timingSafeEqual(digest(presented), expected)) return next();
    if (orElse?.(req)) return next();
    res.set('WWW-Authenticate', `Bearer realm="${realm}"`).status(401).json({ error: `missing or wrong bearer token for ${realm}` });
  };
}
