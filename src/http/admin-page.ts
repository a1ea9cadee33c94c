// The ops dashboard at /admin: one page an operator keeps open. Plain HTML, CSS and a small
// script served by the app itself (no build step, no CDN). Data comes from /admin/api/* with the
// session cookie; everything from the database is rendered with textContent, never as HTML.
// Served with a CSP that allows only these same-origin files.

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

export const dashboardPage = layout(
  'stripe-inbox · ops',
  `<header><h1>stripe-inbox</h1><span id="updated"></span>
<form method="post" action="/admin/logout"><button type="submit">Sign out</button></form></header>
<main>
  <section id="counts" class="cards" aria-label="Events by status"></section>
  <section class="facts"><span>oldest processing: <b id="oldest">–</b></span><span>jobs queued: <b id="jobs">–</b></span>
    <span>last sweep: <b id="last-sweep">–</b></span><button id="sweep" type="button">Sweep now</button><span id="sweep-result"></span></section>
  <section><h2>Per minute, last <select id="hours"><option>1</option><option selected>3</option><option>12</option><option>24</option></select> hours</h2>
    <svg id="chart" viewBox="0 0 720 160" preserveAspectRatio="none" role="img" aria-label="received, finished and failed events per minute"></svg>
    <p class="legend"><span class="received">received</span> <span class="finished">finished</span> <span class="failed">failed</span></p></section>
  <section><h2>Failed <small>(dead letters: fix the cause, then replay)</small></h2><table id="failed"></table></section>
  <section><h2>Stuck <small>(processing longer than the stale threshold)</small></h2><table id="stuck"></table></section>
  <section><h2>Search</h2><form id="search"><input id="q" placeholder="event id, object id or order id" required><button type="submit">Search</button></form>
    <table id="results"></table></section>
</main><script src="/admin/app.js"></script>`,
);

export const dashboardCss = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1a1a2e; background: #f6f7fb; }
header { display: flex; gap: 1rem; align-items: center; padding: .6rem 1.2rem; background: #1a1a2e; color: #fff; }
header h1 { font-size: 1.1rem; margin: 0; } header form { margin-left: auto; } #updated { opacity: .7; }
main { padding: 1rem 1.2rem; max-width: 1100px; } h2 { font-size: 1rem; margin: 1.2rem 0 .4rem; } small { font-weight: normal; opacity: .7; }
.cards { display: flex; gap: .6rem; flex-wrap: wrap; }
.card { background: #fff; border-radius: 6px; padding: .5rem .9rem; min-width: 7rem; box-shadow: 0 1px 2px #0002; }
.card b { display: block; font-size: 1.5rem; } .card.failed b { color: #c0392b; }
.facts { display: flex; gap: 1.2rem; align-items: center; margin-top: .8rem; flex-wrap: wrap; }
table { border-collapse: collapse; width: 100%; background: #fff; } td, th { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #eee; vertical-align: top; }
td.error { color: #c0392b; max-width: 28rem; word-break: break-word; } td.empty { opacity: .6; }
svg { width: 100%; height: 160px; background: #fff; border-radius: 6px; }
.legend span::before { content: ''; display: inline-block; width: .8rem; height: .2rem; margin-right: .3rem; vertical-align: middle; }
.received::before { background: #2f6fde; } .finished::before { background: #27ae60; } .failed::before { background: #c0392b; }
.login { max-width: 22rem; margin: 15vh auto; background: #fff; padding: 1.5rem; border-radius: 8px; box-shadow: 0 1px 3px #0003; }
.login label, .login input { display: block; width: 100%; box-sizing: border-box; margin-bottom: .6rem; } .error { color: #c0392b; }
button { cursor: pointer; }`;

export const dashboardJs = `'use strict';
const $ = (id) => document.getElementById(id);

async function api(method, path) {
  const response = await fetch('/admin/api' + path, { method, headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (response.status === 401) { location.reload(); throw new Error('signed out'); }
  if (!response.ok) throw new Error(method + ' ' + path + ' answered ' + response.status);
  return response.json();
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text == null ? '' : String(text);
  if (className) td.className = className;
  return td;
}

function eventTable(table, events, emptyText) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of ['event', 'type', 'status', 'attempts', 'last error', 'received', '']) head.appendChild(document.createElement('th')).textContent = h;
  const body = table.createTBody();
  if (events.length === 0) { const td = cell(body.insertRow(), emptyText, 'empty'); td.colSpan = 7; return; }
  for (const e of events) {
    const row = body.insertRow();
    row.dataset.eventId = e.event_id;
    cell(row, e.event_id); cell(row, e.type); cell(row, e.status, 'status'); cell(row, e.attempts);
    cell(row, e.last_error, 'error'); cell(row, new Date(e.received_at).toLocaleString());
    const button = cell(row, '').appendChild(document.createElement('button'));
    button.type = 'button'; button.textContent = 'Replay';
    button.addEventListener('click', async () => {
      button.disabled = true;
      await api('POST', '/events/' + encodeURIComponent(e.event_id) + '/replay');
      await refresh();
    });
  }
}

function drawChart(points) {
  const svg = $('chart'); svg.replaceChildren();
  const max = Math.max(1, ...points.flatMap((p) => [p.received, p.finished, p.failed]));
  const x = (i) => (points.length < 2 ? 0 : (i / (points.length - 1)) * 720);
  const y = (v) => 155 - (v / max) * 145;
  for (const [key, color] of [['received', '#2f6fde'], ['finished', '#27ae60'], ['failed', '#c0392b']]) {
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    line.setAttribute('points', points.map((p, i) => x(i).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' '));
    line.setAttribute('fill', 'none'); line.setAttribute('stroke', color); line.setAttribute('stroke-width', '1.5');
    line.dataset.series = key;
    svg.appendChild(line);
  }
  const label = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  label.setAttribute('x', '4'); label.setAttribute('y', '14'); label.setAttribute('font-size', '11'); label.textContent = 'max ' + max + '/min';
  svg.appendChild(label);
}

async function refresh() {
  const [status, failed, stuck, timeline] = await Promise.all([
    api('GET', '/status'), api('GET', '/events?status=failed'), api('GET', '/events?status=stuck'), api('GET', '/timeline?hours=' + $('hours').value),
  ]);
  // The statuses, in their order, are the server's (EVENT_STATUSES): the dashboard keeps no list.
  $('counts').replaceChildren(...Object.keys(status.counts).map((s) => {
    const card = document.createElement('div'); card.className = 'card ' + s; card.dataset.status = s;
    card.append(s); card.appendChild(document.createElement('b')).textContent = String(status.counts[s]);
    return card;
  }));
  $('oldest').textContent = status.oldest_processing_age_seconds == null ? 'none' : status.oldest_processing_age_seconds + ' s';
  $('jobs').textContent = status.jobs_queued + ' (' + status.events_queued + ' events)';
  $('last-sweep').textContent = status.last_sweep_at ? new Date(status.last_sweep_at).toLocaleString() : 'never';
  eventTable($('failed'), failed, 'No failed events.');
  eventTable($('stuck'), stuck, 'Nothing stuck.');
  drawChart(timeline);
  $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
}

$('sweep').addEventListener('click', async () => {
  const result = await api('POST', '/sweep');
  $('sweep-result').textContent = 'reclaimed ' + result.reclaimed + ', failed ' + result.failed;
  await refresh();
});
$('hours').addEventListener('change', () => void refresh());
$('search').addEventListener('submit', async (event) => {
  event.preventDefault();
  eventTable($('results'), await api('GET', '/search?q=' + encodeURIComponent($('q').value.trim())), 'No event matches.');
});
void refresh();
setInterval(() => void refresh().catch(() => {}), 5000);
`;
