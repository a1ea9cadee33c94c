// @ts-check
// Events: a table of them (failed, stuck, a search's results, an event's relatives), each with a
// Replay button, and the detail dialog one opens.
import { api, call } from './api-client.js';
import { $, buttonCell, cell, tableBody } from './dom.js';
import { describeFields, layOut } from './format.js';
import { notificationTable } from './notifications-view.js';
import { refresh } from './refresh.js';

/**
 * @import { BusinessRecord } from './format.js'
 * @import { NotificationView } from './notifications-view.js'
 * @typedef {{ event_id: string, type: string, status: string, attempts: number, last_error: string | null, received_at: string,
 *   waits_for: string[] | null, wait_until: string | null }} EventSummary
 * @typedef {EventSummary & { object_id: string | null, duplicate_of: string | null, livemode: boolean, finished_at: string | null,
 *   related: EventSummary[], records: BusinessRecord[], notifications: NotificationView[] }} EventDetail
 */

/**
 * @param {HTMLTableElement} table
 * @param {EventSummary[]} events
 * @param {string} emptyText
 */
export function eventTable(table, events, emptyText) {
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
 * Opens the event's detail: its facts, the business records it names or touched (the order it
 * paid), the other events of the same Stripe object, and the payload as stored.
 * @param {string} eventId
 */
export async function showDetail(eventId) {
  const path = '/events/' + encodeURIComponent(eventId);
  /** @type {[EventDetail, string]} */
  const [detail, payload] = await Promise.all([api('GET', path), call('GET', path + '/payload').then((r) => r.text())]);
  $('detail-title').textContent = detail.type + ' · ' + detail.event_id;
  const facts = $('detail-facts');
  facts.replaceChildren();
  for (const [name, value] of Object.entries({
    status: detail.status,
    attempts: detail.attempts,
    'last error': detail.last_error,
    'waits for': detail.waits_for?.join(' '),
    'wait gives up': detail.wait_until,
    object: detail.object_id,
    'duplicate of': detail.duplicate_of,
    livemode: detail.livemode,
    received: detail.received_at,
    finished: detail.finished_at,
  })) {
    facts.appendChild(document.createElement('dt')).textContent = name;
    facts.appendChild(document.createElement('dd')).textContent = value == null ? '–' : String(value);
  }
  const records = $('detail-records');
  records.replaceChildren();
  for (const record of detail.records)
    records.appendChild(document.createElement('li')).textContent = record.kind + ' ' + record.id + ': ' + describeFields(record.fields);
  if (detail.records.length === 0) records.appendChild(document.createElement('li')).textContent = 'none';
  notificationTable($('detail-notifications'), detail.notifications, {
    emptyText: 'None.',
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
