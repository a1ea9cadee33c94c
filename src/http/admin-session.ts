// Browser sessions for the dashboard, and the only writer of admin_sessions. A browser cannot send
// a bearer header on page loads, and the token must never travel in a URL, so POST /admin/login
// with the admin token starts a session: a random id in a cookie that is HttpOnly (no script reads
// it), SameSite=Strict (no other site makes the browser send it; sibling subdomains are the same
// site, which is what same-origin.ts is for), Path=/admin, 12 hours.
// The session lives in Postgres, so signing out ends it at once, wherever the cookie was copied.
// The row holds an HMAC of the id keyed by the admin token, not the id: a database reader cannot
// make a cookie, and rotating ADMIN_TOKEN ends every session.
import { createHmac, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

const SESSION_COOKIE = 'stripe_inbox_admin';
const SESSION_SECONDS = 12 * 60 * 60;
/** 256 bits: a session id is as hard to guess as the admin token it stands for. */
const SESSION_ID_BYTES = 32;

export interface SessionDeps {
  db: Kysely<Database>;
  adminToken: string;
}

const sessionDigest = (adminToken: string, id: string) => createHmac('sha256', adminToken).update(`admin-session:${id}`).digest('base64url');

function sessionId(req: Request): string | undefined {
  const cookie = (req.headers.cookie ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  const id = cookie?.slice(SESSION_COOKIE.length + 1);
  return id ? id : undefined;
}

export async function startSession({ db, adminToken }: SessionDeps, req: Request, res: Response): Promise<void> {
  const id = randomBytes(SESSION_ID_BYTES).toString('base64url');
  // Rows past their expiry are of no use to anyone: each sign-in clears them.
  await db
    .deleteFrom('admin_sessions')
    .where('expires_at', '<', sql<Date>`now()`)
    .execute();
  await db
    .insertInto('admin_sessions')
    .values({ session_digest: sessionDigest(adminToken, id), expires_at: sql<Date>`now() + make_interval(secs => ${SESSION_SECONDS})` })
    .execute();
  res.cookie(SESSION_COOKIE, id, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.secure,
    path: '/admin',
    maxAge: SESSION_SECONDS * 1000,
  });
}

/** Revokes the request's session, if it has one, and clears the cookie. */
export async function endSession({ db, adminToken }: SessionDeps, req: Request, res: Response): Promise<void> {
  const id = sessionId(req);
  if (id !== undefined) {
    await db
      .updateTable('admin_sessions')
      .set({ revoked_at: sql<Date>`now()` })
      .where('session_digest', '=', sessionDigest(adminToken, id))
      .where('revoked_at', 'is', null)
      .execute();
  }
  res.clearCookie(SESSION_COOKIE, { path: '/admin' });
}

export async function hasSession({ db, adminToken }: SessionDeps, req: Request): Promise<boolean> {
  const id = sessionId(req);
  if (id === undefined) return false;
  const session = await db
    .selectFrom('admin_sessions')
    .select('session_digest')
    .where('session_digest', '=', sessionDigest(adminToken, id))
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return session !== undefined;
}
