// @ts-check
// Outcome notifications: a table of them with their deliveries and attempts, each with a Replay
// button, and per endpoint what it is still owed.
import { api } from './api-client.js';
import { $, buttonCell, cell, tableBody } from './dom.js';

/**
 * @typedef {{ endpoint: string, pending: number, failed: number, oldest_pending_age_seconds: number | null }} EndpointSummary
 * @typedef {{ enabled: boolean, endpoints: EndpointSummary[] }} NotificationStatus
 * @typedef {{ started_at: string, duration_ms: number, status_code: number | null, error: string | null }} AttemptView
 * @typedef {{ endpoint: string, status: string, attempts: number, next_attempt_at: string | null, delivered_at: string | null, attempt_log: AttemptView[] }} DeliveryView
 * @typedef {{ notification_id: string, type: string, sequence: number | null, event_id: string | null, created_at: string, body: unknown, deliveries: DeliveryView[] }} NotificationView
 */

/**
 * Queues notifications again: the same webhook-id and body, a fresh count of attempts. One is
 * skipped when it is unknown or an attempt of it is in flight.
 * @param {{ ids: string[] } | { failed: true }} which
 */
export async function replayNotifications(which) {
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
 * @param {{ emptyText: string, showEvent?: (eventId: string) => Promise<void>, withSequence?: boolean, afterReplay: () => Promise<void> }} options
 *   showEvent: a column for the event that made each one, whose button opens it with this (none in
 *   that event's own detail);
 *   withSequence: a column for each one's per-account sequence (in an account's view);
 *   afterReplay: shows what the replay changed
 */
export function notificationTable(table, notifications, { emptyText, showEvent, withSequence = false, afterReplay }) {
  const opened = new Set(
    [...table.querySelectorAll('tr[data-notification-id]:has(details[open])')].map((row) => /** @type {HTMLElement} */ (row).dataset.notificationId),
  );
  const headings = ['notification', ...(withSequence ? ['sequence'] : []), 'type', ...(showEvent ? ['event'] : []), 'created', 'deliveries', ''];
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
    if (showEvent) {
      const eventId = n.event_id;
      // None for a module's own job (a subscription state fetched from Stripe).
      if (eventId === null) cell(row, '–');
      else buttonCell(row, 'event', eventId, () => showEvent(eventId));
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
export function notificationFacts(notifications) {
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
    fact.append(
      'notifications to ' + e.endpoint + ': pending ',
      bold('pending', String(e.pending)),
      ', failed ',
      bold('failed', String(e.failed)),
      ', oldest pending ',
      bold('oldest', oldest),
    );
    return fact;
  });
  $('notification-facts').replaceChildren(...facts);
  if (facts.length === 0) $('notification-facts').textContent = notifications.enabled ? 'notifications: all delivered' : 'notifications off';
}
