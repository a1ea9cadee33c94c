// /admin: the dashboard page, signing in and out, and its static files. Everything else under
// /admin (the JSON API) sits behind adminGuard, which takes the bearer token or a session; with a
// session, a request that changes something must also come from the dashboard's own origin.
import express, { Router, type RequestHandler } from 'express';
import { ADMIN_CSP, dashboardCss, dashboardPage, dashboardScripts, loginPage } from './admin-page.js';
import { endSession, hasSession, startSession, type SessionDeps } from './admin-session.js';
import { hasBearer, refuseUnauthenticated, secretsEqual } from './auth.js';
import { isCrossOrigin, refuseCrossOrigin } from './same-origin.js';

export function adminGuard(deps: SessionDeps): RequestHandler {
  return async (req, res, next) => {
    if (hasBearer(req, deps.adminToken)) return next();
    if (!(await hasSession(deps, req))) return refuseUnauthenticated(res, 'admin');
    if (isCrossOrigin(req)) return refuseCrossOrigin(req, res);
    next();
  };
}

export function adminDashboard(deps: SessionDeps): Router {
  const { adminToken } = deps;
  const router = Router();
  const html =
    (status: number, body: string): RequestHandler =>
    (_req, res) => {
      res.status(status).set({ 'Content-Security-Policy': ADMIN_CSP, 'Cache-Control': 'no-store' }).type('html').send(body);
    };

  // A browser gets the page (or the sign-in form); an API client gets JSON like every /admin route.
  // all(), not get(): any other method must fall through to the guard (Express would otherwise
  // answer OPTIONS itself).
  router.all(['/admin', '/admin/'], async (req, res, next) => {
    if (req.method !== 'GET' || req.accepts(['json', 'html']) !== 'html') return next();
    return (await hasSession(deps, req)) ? html(200, dashboardPage)(req, res, next) : html(401, loginPage())(req, res, next);
  });
  // The stylesheet carries no data and the sign-in page needs it.
  router.get('/admin/app.css', (_req, res) => void res.type('css').set('Cache-Control', 'no-cache').send(dashboardCss));
  for (const [name, script] of dashboardScripts) {
    router.get(`/admin/${name}`, adminGuard(deps), (_req, res) => void res.type('js').set('Cache-Control', 'no-cache').send(script));
  }

  router.post('/admin/login', express.urlencoded({ extended: false, limit: '4kb' }), async (req, res, next) => {
    const token: unknown = (req.body as Record<string, unknown> | undefined)?.token;
    if (typeof token !== 'string' || !secretsEqual(token, adminToken)) {
      return html(401, loginPage('That is not the admin token.'))(req, res, next);
    }
    await startSession(deps, req, res);
    res.redirect(303, '/admin');
  });
  // Not behind the guard: signing out with an expired session still clears the cookie and shows
  // the sign-in page. Another origin may not sign the operator out.
  router.post('/admin/logout', async (req, res) => {
    if (isCrossOrigin(req)) return refuseCrossOrigin(req, res);
    await endSession(deps, req, res);
    res.redirect(303, '/admin');
  });
  return router;
}
