// @ts-check
// The dashboard's script (src/http/dashboard/index.html): reads /admin/api/* with the session
// cookie every 5 s and renders with textContent only, never as HTML (the values come from Stripe
// payloads and the database). Type-checked against the DOM by tsconfig.dashboard.json and linted.
'use strict';

/**
 * @typedef {{ event_id: string, type: string, status: string, attempts: number, last_error: string | null, received_at: string }} EventSummary
 * @typedef {{ counts: Record<string, number>, history_counted_at: string, oldest_processing_age_seconds: number | null, jobs_queued: number, events_queued: number, last_sweep_at: string | null }} InboxStatus
 * @typedef {{ minute: string, received: number, finished: number, failed: number }} MinuteCounts
 * @typedef {{ kind: string, id: string, fields: Record<string, string | number | boolean | null> }} BusinessRecord
 * @typedef {EventSummary & { object_id: string | null, duplicate_of: string | null, livemode: boolean, finished_at: string | null,
 *   related: EventSummary[], records: BusinessRecord[] }} EventDetail
 */

/**
 * The element with this id, which the page must have.
 * @template {HTMLElement | SVGElement} [T=HTMLElement]
 * @param {string} id
 * @returns {T}
 */
function $(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`#${id} is missing from the page`);
  return /** @type {T} */ (/** @type {unknown} */ (element));
}

/** @type {HTMLSelectElement} */
const hours = $('hours');

/**
 * The answer of a call to /admin/api, once it is known to be a success.
 * @param {string} method
 * @param {string} path
 * @returns {Promise<Response>}
 */
async function call(method, path) {
  const response = await fetch('/admin/api' + path, { method, headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (response.status === 401) {
    location.reload();
    throw new Error('signed out');
  }
  if (!response.ok) {
    // The server's reason, when it gave one: a 404 says the event is gone, a 403 what to set.
    /** @type {{ error?: unknown }} */
    const body = await response.json().catch(() => ({}));
    throw new Error(method + ' ' + path + ' answered ' + response.status + (typeof body.error === 'string' ? ': ' + body.error : ''));
  }
  return response;
}

/**
 * @param {string} method
 * @param {string} path
 * @returns {Promise<any>}
 */
async function api(method, path) {
  return (await call(method, path)).json();
}

/**
 * JSON text laid out two spaces a level, each token kept as written. The payload is shown as
 * Stripe sent it, and a parse would not give it back: 1e400 would become null,
 * 18446744073709551617 would be rounded, and of two equal keys one would be lost.
 * @param {string} text JSON (the server stored it as json, so its strings are terminated)
 */
function layOut(text) {
  let out = '';
  let depth = 0;
  const newline = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (c === '"') {
      let end = i + 1;
      while (end < text.length && text.charAt(end) !== '"') end += text.charAt(end) === '\\' ? 2 : 1;
      out += text.slice(i, end + 1);
      i = end;
    } else if (c === '{' || c === '[') {
      const next = text.slice(i + 1).search(/\S/);
      const close = c === '{' ? '}' : ']';
      if (next !== -1 && text.charAt(i + 1 + next) === close) {
        out += c + close;
        i += 1 + next;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') {
      out += ',' + newline();
    } else if (c === ':') {
      out += ': ';
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}

/**
 * Runs what a button or form asked for; a refusal is shown on the page instead of lost in the console.
 * @param {() => Promise<void>} action
 */
async function act(action) {
  $('notice').textContent = '';
  try {
    await action();
  } catch (error) {
    $('notice').textContent = error instanceof Error ? error.message : String(error);
  }
}

/**
 * @param {HTMLTableRowElement} row
 * @param {unknown} text
 * @param {string} [className]
 */
function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text == null ? '' : String(text);
  if (className) td.className = className;
  return td;
}

/**
 * @param {HTMLTableElement} table
 * @param {EventSummary[]} events
 * @param {string} emptyText
 */
function eventTable(table, events, emptyText) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of ['event', 'type', 'status', 'attempts', 'last error', 'received', '']) head.appendChild(document.createElement('th')).textContent = h;
  const body = table.createTBody();
  if (events.length === 0) {
    cell(body.insertRow(), emptyText, 'empty').colSpan = 7;
    return;
  }
  for (const e of events) {
    const row = body.insertRow();
    row.dataset.eventId = e.event_id;
    const open = cell(row, '').appendChild(document.createElement('button'));
    open.type = 'button';
    open.className = 'event';
    open.textContent = e.event_id;
    open.addEventListener('click', () => void act(() => showDetail(e.event_id)));
    cell(row, e.type);
    cell(row, e.status, 'status');
    cell(row, e.attempts);
    cell(row, e.last_error, 'error');
    cell(row, new Date(e.received_at).toLocaleString());
    const button = cell(row, '').appendChild(document.createElement('button'));
    button.type = 'button';
    button.className = 'replay';
    button.textContent = 'Replay';
    button.addEventListener('click', () => void act(async () => {
      button.disabled = true;
      try {
        await api('POST', '/events/' + encodeURIComponent(e.event_id) + '/replay');
      } finally {
        button.disabled = false;
      }
      await refresh();
    }));
  }
}

/**
 * Opens the event's detail: its facts, the business records it names or touched (the order it
 * paid), the other events of the same Stripe object, and the payload as stored.
 * @param {string} eventId
 */
async function showDetail(eventId) {
  const path = '/events/' + encodeURIComponent(eventId);
  /** @type {[EventDetail, string]} */
  const [detail, payload] = await Promise.all([api('GET', path), call('GET', path + '/payload').then((r) => r.text())]);
  $('detail-title').textContent = detail.type + ' · ' + detail.event_id;
  const facts = $('detail-facts');
  facts.replaceChildren();
  for (const [name, value] of Object.entries({
    status: detail.status, attempts: detail.attempts, 'last error': detail.last_error, object: detail.object_id,
    'duplicate of': detail.duplicate_of, livemode: detail.livemode, received: detail.received_at, finished: detail.finished_at,
  })) {
    facts.appendChild(document.createElement('dt')).textContent = name;
    facts.appendChild(document.createElement('dd')).textContent = value == null ? '–' : String(value);
  }
  const records = $('detail-records');
  records.replaceChildren();
  for (const record of detail.records) {
    const fields = Object.entries(record.fields).map(([name, value]) => name + ' ' + (value == null ? '–' : String(value)));
    records.appendChild(document.createElement('li')).textContent = record.kind + ' ' + record.id + ': ' + fields.join(', ');
  }
  if (detail.records.length === 0) records.appendChild(document.createElement('li')).textContent = 'none';
  eventTable($('detail-related'), detail.related, 'No other event of this object.');
  $('detail-payload').textContent = layOut(payload);
  /** @type {HTMLDialogElement} */
  const dialog = $('detail');
  if (!dialog.open) dialog.showModal();
}

/** @param {MinuteCounts[]} points */
function drawChart(points) {
  const svg = $('chart');
  svg.replaceChildren();
  const max = Math.max(1, ...points.flatMap((p) => [p.received, p.finished, p.failed]));
  /** @param {number} i */
  const x = (i) => (points.length < 2 ? 0 : (i / (points.length - 1)) * 720);
  /** @param {number} v */
  const y = (v) => 155 - (v / max) * 145;
  /** @type {Array<['received' | 'finished' | 'failed', string]>} */
  const series = [['received', '#2f6fde'], ['finished', '#27ae60'], ['failed', '#c0392b']];
  for (const [key, color] of series) {
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    line.setAttribute('points', points.map((p, i) => x(i).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' '));
    line.setAttribute('fill', 'none');
    line.setAttribute('stroke', color);
    line.setAttribute('stroke-width', '1.5');
    line.dataset.series = key;
    svg.appendChild(line);
  }
  const label = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  label.setAttribute('x', '4');
  label.setAttribute('y', '14');
  label.setAttribute('font-size', '11');
  label.textContent = 'max ' + max + '/min';
  svg.appendChild(label);
}

async function refresh() {
  /** @type {[InboxStatus, EventSummary[], EventSummary[], MinuteCounts[]]} */
  const [status, failed, stuck, timeline] = await Promise.all([
    api('GET', '/status'), api('GET', '/events?status=failed'), api('GET', '/events?status=stuck'), api('GET', '/timeline?hours=' + hours.value),
  ]);
  // The statuses, in their order, are the server's (EVENT_STATUSES): the dashboard keeps no list.
  $('counts').replaceChildren(...Object.entries(status.counts).map(([s, n]) => {
    const card = document.createElement('div');
    card.className = 'card ' + s;
    card.dataset.status = s;
    card.append(s);
    card.appendChild(document.createElement('b')).textContent = String(n);
    return card;
  }));
  // Finished statuses of a large history are recounted every few minutes (GET /admin/api/status).
  $('counts').title = 'processed, ignored and duplicate counted at ' + new Date(status.history_counted_at).toLocaleTimeString();
  $('oldest').textContent = status.oldest_processing_age_seconds == null ? 'none' : status.oldest_processing_age_seconds + ' s';
  $('jobs').textContent = status.jobs_queued + ' (' + status.events_queued + ' events)';
  $('last-sweep').textContent = status.last_sweep_at ? new Date(status.last_sweep_at).toLocaleString() : 'never';
  eventTable($('failed'), failed, 'No failed events.');
  eventTable($('stuck'), stuck, 'Nothing stuck.');
  drawChart(timeline);
  $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
}

$('sweep').addEventListener('click', () => void act(async () => {
  const result = await api('POST', '/sweep');
  $('sweep-result').textContent = 'reclaimed ' + result.reclaimed + ', failed ' + result.failed;
  await refresh();
}));
hours.addEventListener('change', () => void refresh());
$('search').addEventListener('submit', (event) => {
  event.preventDefault();
  /** @type {HTMLInputElement} */
  const q = $('q');
  void act(async () => eventTable($('results'), await api('GET', '/search?q=' + encodeURIComponent(q.value.trim())), 'No event matches.'));
});
void refresh();
setInterval(() => void refresh().catch(() => {}), 5000);
