// @ts-check
// The dashboard's entry (src/http/dashboard/index.html loads it as a module): draws the page from
// /admin/api/* every 5 s with the session cookie and wires the page's buttons and forms to the
// views. Every file here is type-checked against the DOM by tsconfig.dashboard.json and linted.
import { refreshAccount, showAccount } from './accounts-view.js';
import { api } from './api-client.js';
import { catalogInput, catalogTable, showCatalogFields } from './catalog-view.js';
import { drawChart } from './chart.js';
import { $, act } from './dom.js';
import { eventTable, showDetail } from './events-view.js';
import { notificationFacts, notificationTable, replayNotifications } from './notifications-view.js';
import { usageTable } from './usage-view.js';
import { refreshWith } from './refresh.js';

/**
 * @import { CatalogItem } from './catalog-view.js'
 * @import { MinuteCounts } from './chart.js'
 * @import { EventSummary } from './events-view.js'
 * @import { NotificationStatus, NotificationView } from './notifications-view.js'
 * @import { UsageReports } from './usage-view.js'
 * @typedef {{ counts: Record<string, number>, history_counted_at: string, waiting: number, oldest_processing_age_seconds: number | null, jobs_queued: number, events_queued: number, last_sweep_at: string | null,
 *   notifications: NotificationStatus }} InboxStatus
 */

/** @type {HTMLSelectElement} */
const hours = $('hours');
/** @type {HTMLSelectElement} */
const notificationStatus = $('notification-status');
/** @type {HTMLSelectElement} */
const usageStatus = $('usage-status');

async function drawPage() {
  /** @type {[InboxStatus, EventSummary[], EventSummary[], EventSummary[], MinuteCounts[], NotificationView[], CatalogItem[], CatalogItem[], UsageReports]} */
  const [status, failed, stuck, waiting, timeline, notifications, packages, plans, usage] = await Promise.all([
    api('GET', '/status'),
    api('GET', '/events?status=failed'),
    api('GET', '/events?status=stuck'),
    api('GET', '/events?status=waiting'),
    api('GET', '/timeline?hours=' + hours.value),
    api('GET', '/notifications?status=' + notificationStatus.value),
    api('GET', '/packages'),
    api('GET', '/plans'),
    api('GET', '/usage-reports?status=' + usageStatus.value),
  ]);
  // The statuses, in their order, are the server's (EVENT_STATUSES): the dashboard keeps no list.
  $('counts').replaceChildren(
    ...Object.entries(status.counts).map(([s, n]) => {
      const card = document.createElement('div');
      card.className = 'card ' + s;
      card.dataset.status = s;
      card.append(s);
      card.appendChild(document.createElement('b')).textContent = String(n);
      return card;
    }),
  );
  // Finished statuses of a large history are recounted every few minutes (GET /admin/api/status).
  $('counts').title = 'processed, ignored and duplicate counted at ' + new Date(status.history_counted_at).toLocaleTimeString();
  $('oldest').textContent = status.oldest_processing_age_seconds == null ? 'none' : status.oldest_processing_age_seconds + ' s';
  $('waiting-count').textContent = String(status.waiting);
  $('jobs').textContent = status.jobs_queued + ' (' + status.events_queued + ' events)';
  $('last-sweep').textContent = status.last_sweep_at ? new Date(status.last_sweep_at).toLocaleString() : 'never';
  eventTable($('failed'), failed, 'No failed events.');
  eventTable($('stuck'), stuck, 'Nothing stuck.');
  eventTable($('waiting'), waiting, 'Nothing waiting.');
  notificationFacts(status.notifications);
  notificationTable($('notifications'), notifications, {
    emptyText: 'No ' + notificationStatus.value + ' notifications.',
    showEvent: showDetail,
    afterReplay: drawPage,
  });
  drawChart(timeline);
  catalogTable(packages, plans);
  usageTable(usage, { status: usageStatus.value, afterReplay: drawPage });
  await refreshAccount();
  $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
}

refreshWith(drawPage);
$('sweep').addEventListener(
  'click',
  () =>
    void act(async () => {
      const result = await api('POST', '/sweep');
      $('sweep-result').textContent = 'reclaimed ' + result.reclaimed + ', failed ' + result.failed;
      await drawPage();
    }),
);
$('replay-failed').addEventListener(
  'click',
  () =>
    void act(async () => {
      await replayNotifications({ failed: true });
      await drawPage();
    }),
);
hours.addEventListener('change', () => void drawPage());
notificationStatus.addEventListener('change', () => void drawPage());
usageStatus.addEventListener('change', () => void drawPage());
$('catalog-add').addEventListener('submit', (event) => {
  event.preventDefault();
  const kind = /** @type {HTMLSelectElement} */ ($('catalog-kind')).value;
  void act(async () => {
    await api('POST', '/' + kind, catalogInput());
    /** @type {HTMLFormElement} */ ($('catalog-add')).reset();
    showCatalogFields();
    await drawPage();
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
void drawPage();
setInterval(() => void drawPage().catch(() => {}), 5000);
