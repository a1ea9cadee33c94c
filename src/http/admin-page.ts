// The ops dashboard at /admin: one page an operator keeps open. Plain HTML, CSS and small ES
// modules (src/http/dashboard/), served by the app itself (no build step, no CDN). Data comes from
// /admin/api/* with the session cookie; everything from the database is rendered with
// textContent, never as HTML. Served with a CSP that allows only these same-origin files.
import { readdirSync, readFileSync } from 'node:fs';

export const ADMIN_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'";

const layout = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><link rel="stylesheet" href="/admin/app.css"></head>
<body>${body}</body></html>`;

export function loginPage(error?: string): string {
  return layout(
    'stripe-inbox · sign in',
    `<main class="login"><h1>stripe-inbox</h1>
<form method="post" action="/admin/login">
  <label for="token">Admin token</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
  <button type="submit">Sign in</button>
  ${error ? `<p class="error" role="alert">${error}</p>` : ''}
</form></main>`,
  );
}

// The dashboard itself is static files beside this one (src/http/dashboard/), read once: the page,
// its stylesheet and its scripts, app.js and the modules it imports, by file name.
const dashboardFolder = new URL('./dashboard/', import.meta.url);
const dashboardFile = (name: string) => readFileSync(new URL(name, dashboardFolder), 'utf8');
export const dashboardPage = dashboardFile('index.html');
export const dashboardCss = dashboardFile('app.css');
export const dashboardScripts: ReadonlyMap<string, string> = new Map(
  readdirSync(dashboardFolder)
    .filter((name) => name.endsWith('.js'))
    .map((name) => [name, dashboardFile(name)]),
);
