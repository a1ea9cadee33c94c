// @ts-check
// The dashboard's script (src/http/dashboard/index.html): reads /admin/api/* with the session
// cookie every 5 s and renders with textContent only, never as HTML (the values come from Stripe
// payloads and the database). Type-checked against the DOM by tsconfig.dashboard.json and linted.
'use strict';

/**
 * @typedef {{ event_id: string, type: string, status: string, attempts: number, last_error: string | null, received_at: string }} EventSummary
 * @typedef {{ endpoint: string, pending: number, failed: number, oldest_pending_age_seconds: number | null }} EndpointSummary
 * @typedef {{ enabled: boolean, endpoints: EndpointSummary[] }} NotificationStatus
 * @typedef {{ counts: Record<string, number>, history_counted_at: string, waiting: number, oldest_processing_age_seconds: number | null, jobs_queued: number, events_queued: number, last_sweep_at: string | null,
 *   notifications: NotificationStatus }} InboxStatus
 * @typedef {{ minute: string, received: number, finished: number, failed: number }} MinuteCounts
 * @typedef {{ kind: string, id: string, fields: Record<string, string | number | boolean | null> }} BusinessRecord
 * @typedef {EventSummary & { object_id: string | null, duplicate_of: string | null, livemode: boolean, finished_at: string | null,
 *   related: EventSummary[], records: BusinessRecord[], notifications: NotificationView[] }} EventDetail
 * @typedef {{ started_at: string, duration_ms: number, status_code: number | null, error: string | null }} AttemptView
 * @typedef {{ endpoint: string, status: string, attempts: number, next_attempt_at: string | null, delivered_at: string | null, attempt_log: AttemptView[] }} DeliveryView
 * @typedef {{ notification_id: string, type: string, sequence: number | null, event_id: string | null, created_at: string, body: unknown, deliveries: DeliveryView[] }} NotificationView
 * @typedef {{ id: string, name: string, amount: number, currency: string, credits: number, active: boolean, stripe_price_id: string | null,
 *   interval?: string, interval_count?: number }} CatalogItem
 * @typedef {{ for: string, id: string, credits: number, taken_back: number, amount: number, currency: string, granted_at: string, event_id: string,
 *   fields: BusinessRecord['fields'] }} AccountGrant
 * @typedef {{ run_id: string, quantity: number, created_at: string, reversed_at: string | null }} AccountRun
 * @typedef {{ account_id: string, balance: { granted: number, used: number, remaining: number }, grants: AccountGrant[], runs: AccountRun[],
 *   records: BusinessRecord[], notifications: NotificationView[] }} AccountView
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
/** @type {HTMLSelectElement} */
const notificationStatus = $('notification-status');

/**
 * The answer of a call to /admin/api, once it is known to be a success.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] sent as JSON
 * @returns {Promise<Response>}
 */
async function call(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch('/admin/api' + path, { method, headers, credentials: 'same-origin', body: body === undefined ? null : JSON.stringify(body) });
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
 * @param {unknown} [body] sent as JSON
 * @returns {Promise<any>}
 */
async function api(method, path, body) {
  return (await call(method, path, body)).json();
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
 * An amount in a currency's smallest unit (as Stripe and the catalog keep it) as money: 4900 chf is
 * CHF 49.00, 4900 jpy is JPY 4,900. Intl knows each currency's minor-unit digits (ISO 4217: 2 for
 * most, 0 for JPY or KRW, 3 for KWD), which are Stripe's too; a code Intl does not know is shown
 * as stored.
 * @param {number} amount
 * @param {string} currency
 */
function money(amount, currency) {
  try {
    const format = new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase(), currencyDisplay: 'code' });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    // Intl puts a no-break space after the code: a plain one reads and searches the same.
    return format.format(amount / 10 ** digits).replace(/\u00a0/g, ' ');
  } catch {
    return amount + ' ' + currency;
  }
}

/**
 * A business record's fields as one line; an amount (amount, amount_paid, refunded_amount) as
 * money in `currency`, or in the record's own currency field.
 * @param {BusinessRecord['fields']} fields
 * @param {string} [currency]
 */
function describeFields(fields, currency) {
  const unit = currency ?? (typeof fields.currency === 'string' ? fields.currency : undefined);
  return Object.entries(fields).map(([name, value]) => {
    if (typeof value === 'number' && unit && /amount/.test(name)) return name + ' ' + money(value, unit);
    return name + ' ' + (value == null ? '–' : String(value));
  }).join(', ');
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
 * A button in a new cell of the row, disabled while its action runs.
 * @param {HTMLTableRowElement} row
 * @param {string} className
 * @param {string} text
 * @param {() => Promise<void>} action
 */
function buttonCell(row, className, text, action) {
  const button = cell(row, '').appendChild(document.createElement('button'));
  button.type = 'button';
  button.className = className;
  button.textContent = text;
  button.addEventListener('click', () => void act(async () => {
    button.disabled = true;
    try {
      await action();
    } finally {
      button.disabled = false;
    }
  }));
}

/**
 * Empties the table and gives it these headings; the body it returns says `emptyText` when there are no rows.
 * @param {HTMLTableElement} table
 * @param {string[]} headings
 * @param {number} rows
 * @param {string} emptyText
 */
function tableBody(table, headings, rows, emptyText) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of headings) head.appendChild(document.createElement('th')).textContent = h;
  const body = table.createTBody();
  if (rows === 0) cell(body.insertRow(), emptyText, 'empty').colSpan = headings.length;
  return body;
}

/**
 * @param {HTMLTableElement} table
 * @param {EventSummary[]} events
 * @param {string} emptyText
 */
function eventTable(table, events, emptyText) {
  const body = tableBody(table, ['event', 'type', 'status', 'attempts', 'last error', 'received', ''], events.length, emptyText);
  for (const e of events) {
    const row = body.insertRow();
    row.dataset.eventId = e.event_id;
    buttonCell(row, 'event', e.event_id, () => showDetail(e.event_id));
    cell(row, e.type);
    cell(row, e.status, 'status');
    cell(row, e.attempts);
    cell(row, e.last_error, 'error');
    cell(row, new Date(e.received_at).toLocaleString());
    buttonCell(row, 'replay', 'Replay', async () => {
      await api('POST', '/events/' + encodeURIComponent(e.event_id) + '/replay');
      await refresh();
    });
  }
}

/**
 * Queues notifications again: the same webhook-id and body, a fresh count of attempts. One is
 * skipped when it is unknown or an attempt of it is in flight.
 * @param {{ ids: string[] } | { failed: true }} which
 */
async function replayNotifications(which) {
  /** @type {{ replayed: string[], skipped: string[] }} */
  const result = await api('POST', '/notifications/replay', which);
  $('notification-replay-result').textContent = 'replayed ' + result.replayed.length + ', skipped ' + result.skipped.length;
}

/**
 * One line per delivery (one per endpoint): its status, then its attempts, oldest first.
 * @param {HTMLTableCellElement} td
 * @param {DeliveryView} delivery
 */
function showDelivery(td, delivery) {
  const block = td.appendChild(document.createElement('div'));
  block.className = 'delivery';
  block.dataset.status = delivery.status;
  block.appendChild(document.createElement('b')).textContent = delivery.status;
  if (delivery.delivered_at) block.append(' ' + new Date(delivery.delivered_at).toLocaleString());
  if (delivery.next_attempt_at) block.append(', next attempt ' + new Date(delivery.next_attempt_at).toLocaleString());
  // attempts counts from the last replay; the log keeps the attempts before it too.
  block.append(' · ' + delivery.attempts + (delivery.attempts === 1 ? ' attempt' : ' attempts') + ' · ' + delivery.endpoint);
  const log = block.appendChild(document.createElement('ol'));
  log.className = 'attempts';
  for (const a of delivery.attempt_log) {
    const item = log.appendChild(document.createElement('li'));
    // A failed attempt's error starts with the HTTP status when there was one (src/notifications/send.ts).
    item.textContent = new Date(a.started_at).toLocaleString() + ' · ' + (a.error ?? 'HTTP ' + a.status_code) + ' · ' + a.duration_ms + ' ms';
    if (a.error !== null) item.className = 'error';
  }
}

/**
 * Notifications with their deliveries and a Replay button each. A body opened stays open when
 * the list is drawn again (the page refreshes every 5 s).
 * @param {HTMLTableElement} table
 * @param {NotificationView[]} notifications
 * @param {{ emptyText: string, withEvent: boolean, withSequence?: boolean, afterReplay: () => Promise<void> }} options
 *   withEvent: a column for the event that made each one (not in that event's own detail);
 *   withSequence: a column for each one's per-account sequence (in an account's view);
 *   afterReplay: shows what the replay changed
 */
function notificationTable(table, notifications, { emptyText, withEvent, withSequence = false, afterReplay }) {
  const opened = new Set([...table.querySelectorAll('tr[data-notification-id]:has(details[open])')].map((row) => /** @type {HTMLElement} */ (row).dataset.notificationId));
  const headings = ['notification', ...(withSequence ? ['sequence'] : []), 'type', ...(withEvent ? ['event'] : []), 'created', 'deliveries', ''];
  const body = tableBody(table, headings, notifications.length, emptyText);
  for (const n of notifications) {
    const row = body.insertRow();
    row.dataset.notificationId = n.notification_id;
    const details = cell(row, '', 'id').appendChild(document.createElement('details'));
    details.open = opened.has(n.notification_id);
    details.appendChild(document.createElement('summary')).textContent = n.notification_id;
    details.appendChild(document.createElement('pre')).textContent = JSON.stringify(n.body, null, 2);
    if (withSequence) cell(row, n.sequence, 'sequence');
    cell(row, n.type);
    if (withEvent) {
      const eventId = n.event_id;
      // None for a module's own job (a subscription state fetched from Stripe).
      if (eventId === null) cell(row, '–');
      else buttonCell(row, 'event', eventId, () => showDetail(eventId));
    }
    cell(row, new Date(n.created_at).toLocaleString());
    const deliveries = cell(row, '');
    for (const delivery of n.deliveries) showDelivery(deliveries, delivery);
    buttonCell(row, 'replay', 'Replay', async () => {
      await replayNotifications({ ids: [n.notification_id] });
      await afterReplay();
    });
  }
}

/**
 * Per endpoint, the notifications it is still owed; the server lists only endpoints with one.
 * @param {NotificationStatus} notifications
 */
function notificationFacts(notifications) {
  /** @param {string} count @param {string} text */
  const bold = (count, text) => {
    const b = document.createElement('b');
    b.dataset.count = count;
    b.textContent = text;
    return b;
  };
  const facts = notifications.endpoints.map((e) => {
    const fact = document.createElement('span');
    fact.dataset.endpoint = e.endpoint;
    const oldest = e.oldest_pending_age_seconds == null ? 'none' : e.oldest_pending_age_seconds + ' s';
    fact.append('notifications to ' + e.endpoint + ': pending ', bold('pending', String(e.pending)), ', failed ', bold('failed', String(e.failed)),
      ', oldest pending ', bold('oldest', oldest));
    return fact;
  });
  $('notification-facts').replaceChildren(...facts);
  if (facts.length === 0) $('notification-facts').textContent = notifications.enabled ? 'notifications: all delivered' : 'notifications off';
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
  for (const record of detail.records) records.appendChild(document.createElement('li')).textContent = record.kind + ' ' + record.id + ': ' + describeFields(record.fields);
  if (detail.records.length === 0) records.appendChild(document.createElement('li')).textContent = 'none';
  notificationTable($('detail-notifications'), detail.notifications, {
    emptyText: 'None.',
    withEvent: false,
    afterReplay: async () => {
      await showDetail(eventId);
      await refresh();
    },
  });
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
  // The scale is told beside the legend, not drawn in the chart: the chart stretches to the
  // page's width (preserveAspectRatio none), which would stretch a text in it and cut its top off.
  $('chart-max').textContent = 'top of the chart: ' + max + '/min';
}

/**
 * The packages and plans, each with a button that takes it off sale or puts it back.
 * @param {CatalogItem[]} packages
 * @param {CatalogItem[]} plans
 */
function catalogTable(packages, plans) {
  const items = [...packages.map((item) => ({ kind: 'packages', item })), ...plans.map((item) => ({ kind: 'plans', item }))];
  const body = tableBody($('catalog'), ['kind', 'id', 'name', 'price', 'credits', 'every', 'Stripe Price', 'status', ''], items.length, 'Nothing in the catalog.');
  for (const { kind, item } of items) {
    const row = body.insertRow();
    row.dataset.catalogId = item.id;
    cell(row, kind === 'packages' ? 'package' : 'plan');
    cell(row, item.id);
    cell(row, item.name);
    cell(row, money(item.amount, item.currency), 'money');
    cell(row, item.credits);
    cell(row, item.interval ? item.interval_count + ' ' + item.interval : '');
    cell(row, item.stripe_price_id);
    cell(row, item.active ? 'on sale' : 'archived', 'status');
    buttonCell(row, item.active ? 'archive' : 'restore', item.active ? 'Archive' : 'Put back on sale', async () => {
      await api('PATCH', '/' + kind + '/' + encodeURIComponent(item.id), { active: !item.active });
      await refresh();
    });
  }
}

/** Shows the add form's fields of the kind chosen only (a plan's period is not a package's); a hidden field is disabled, so it is never required. */
function showCatalogFields() {
  const kind = /** @type {HTMLSelectElement} */ ($('catalog-kind')).value;
  for (const field of /** @type {NodeListOf<HTMLInputElement | HTMLSelectElement>} */ (document.querySelectorAll('#catalog-add [data-kind]'))) {
    field.hidden = field.dataset.kind !== kind;
    field.disabled = field.hidden;
  }
}

/** The add form's fields as the admin API takes them; a plan's period only for a plan. */
function catalogInput() {
  /** @param {string} id */
  const value = (id) => /** @type {HTMLInputElement} */ ($(id)).value.trim();
  const plan = value('catalog-kind') === 'plans';
  return {
    id: value('catalog-id'), name: value('catalog-name'), amount: Number(value('catalog-amount')), currency: value('catalog-currency'), credits: Number(value('catalog-credits')),
    ...(value('catalog-price') && { stripe_price_id: value('catalog-price') }),
    ...(plan && { interval: value('catalog-interval'), interval_count: Number(value('catalog-interval-count')) }),
  };
}

/**
 * The account the Accounts box shows, kept fresh with the rest of the page; none until one is asked for.
 * @type {string | undefined}
 */
let shownAccount;

/**
 * Shows what the service holds under the account: its balance, grants, runs, other records and
 * the notifications the app was told of it.
 * @param {string} accountId
 */
async function showAccount(accountId) {
  /** @type {AccountView} */
  const view = await api('GET', '/accounts/' + encodeURIComponent(accountId));
  shownAccount = accountId;
  const balance = $('account-balance');
  balance.replaceChildren('account ', Object.assign(document.createElement('b'), { textContent: view.account_id }));
  for (const name of /** @type {const} */ (['remaining', 'granted', 'used'])) {
    const b = document.createElement('b');
    b.dataset.balance = name;
    b.textContent = String(view.balance[name]);
    balance.append(' · ' + name + ' ', b);
  }
  const grants = tableBody($('account-grants'), ['for', 'credits', 'taken back', 'paid', 'granted', 'event', 'details'], view.grants.length, 'No credits granted.');
  for (const g of view.grants) {
    const row = grants.insertRow();
    row.dataset.grantId = g.id;
    cell(row, g.for + ' ' + g.id);
    cell(row, g.credits);
    cell(row, g.taken_back);
    cell(row, money(g.amount, g.currency), 'money');
    cell(row, new Date(g.granted_at).toLocaleString());
    buttonCell(row, 'event', g.event_id, () => showDetail(g.event_id));
    cell(row, describeFields(g.fields, g.currency));
  }
  const runs = tableBody($('account-runs'), ['run', 'credits', 'at', 'reversed'], view.runs.length, 'No credits used.');
  for (const r of view.runs) {
    const row = runs.insertRow();
    row.dataset.runId = r.run_id;
    cell(row, r.run_id);
    cell(row, r.quantity);
    cell(row, new Date(r.created_at).toLocaleString());
    cell(row, r.reversed_at ? new Date(r.reversed_at).toLocaleString() : '–');
  }
  const records = tableBody($('account-records'), ['kind', 'id', 'details'], view.records.length, 'None.');
  for (const record of view.records) {
    const row = records.insertRow();
    row.dataset.recordId = record.id;
    cell(row, record.kind);
    cell(row, record.id);
    cell(row, describeFields(record.fields));
  }
  notificationTable($('account-notifications'), view.notifications, {
    emptyText: 'None sent.',
    withEvent: true,
    withSequence: true,
    afterReplay: refresh,
  });
  $('account').hidden = false;
}

async function refresh() {
  /** @type {[InboxStatus, EventSummary[], EventSummary[], MinuteCounts[], NotificationView[], CatalogItem[], CatalogItem[]]} */
  const [status, failed, stuck, timeline, notifications, packages, plans] = await Promise.all([
    api('GET', '/status'), api('GET', '/events?status=failed'), api('GET', '/events?status=stuck'), api('GET', '/timeline?hours=' + hours.value),
    api('GET', '/notifications?status=' + notificationStatus.value), api('GET', '/packages'), api('GET', '/plans'),
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
  notificationFacts(status.notifications);
  notificationTable($('notifications'), notifications, { emptyText: 'No ' + notificationStatus.value + ' notifications.', withEvent: true, afterReplay: refresh });
  drawChart(timeline);
  catalogTable(packages, plans);
  if (shownAccount !== undefined) await showAccount(shownAccount);
  $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
}

$('sweep').addEventListener('click', () => void act(async () => {
  const result = await api('POST', '/sweep');
  $('sweep-result').textContent = 'reclaimed ' + result.reclaimed + ', failed ' + result.failed;
  await refresh();
}));
$('replay-failed').addEventListener('click', () => void act(async () => {
  await replayNotifications({ failed: true });
  await refresh();
}));
hours.addEventListener('change', () => void refresh());
notificationStatus.addEventListener('change', () => void refresh());
$('catalog-add').addEventListener('submit', (event) => {
  event.preventDefault();
  const kind = /** @type {HTMLSelectElement} */ ($('catalog-kind')).value;
  void act(async () => {
    await api('POST', '/' + kind, catalogInput());
    /** @type {HTMLFormElement} */ ($('catalog-add')).reset();
    showCatalogFields();
    await refresh();
  });
});
$('catalog-kind').addEventListener('change', showCatalogFields);
showCatalogFields();
$('account-search').addEventListener('submit', (event) => {
  event.preventDefault();
  /** @type {HTMLInputElement} */
  const accountId = $('account-id');
  void act(() => showAccount(accountId.value.trim()));
});
$('search').addEventListener('submit', (event) => {
  event.preventDefault();
  /** @type {HTMLInputElement} */
  const q = $('q');
  void act(async () => eventTable($('results'), await api('GET', '/search?q=' + encodeURIComponent(q.value.trim())), 'No event matches.'));
});
void refresh();
setInterval(() => void refresh().catch(() => {}), 5000);
