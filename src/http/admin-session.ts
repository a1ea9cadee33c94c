// Browser sessions for the dashboard. A browser cannot send a bearer header on page loads, and
// the token must never travel in a URL, so POST /admin/login with the admin token sets a cookie:
// HttpOnly (no script reads it), SameSite=Strict (no other site can make the browser send it,
// which is what stops cross-site requests to replay or sweep), Path=/admin, 12 hours. Its value
// is an expiry and an HMAC keyed by the admin token, not the token: rotating ADMIN_TOKEN ends
// every session.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';

export const SESSION_COOKIE = 'stripe_inbox_admin';
const SESSION_SECONDS = 12 * 60 * 60;

const sign = (adminToken: string, expires: number) => createHmac('sha256', adminToken).update(`admin-session:${expires}`).digest('base64url');
const digest = (value: string) => createHash('sha256').update(value).digest();

export function startSession(res: Response, req: Request, adminToken: string): void {
  const expires = Math.floor(Date.now() / 1000) + SESSION_SECONDS;
  res.cookie(SESSION_COOKIE, `${expires}.${sign(adminToken, expires)}`, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.secure,
    path: '/admin',
    maxAge: SESSION_SECONDS * 1000,
  });
}

export function endSession(res: Response): void {
  res.clearCookie(SESSION_COOKIE, { path: '/admin' });
}

export function hasSession(req: Request, adminToken: string): boolean {
  const cookie = (req.headers.cookie ?? '').split(';').map((c) => c.trim()).find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  const [expires, signature] = (cookie?.slice(SESSION_COOKIE.length + 1) ?? '').split('.');
  const at = Number(expires);
  if (!signature || !Number.isInteger(at) || at < Date.now() / 1000) return false;
  return timingSafeEqual(digest(signature), digest(sign(adminToken, at)));
}
