// @ts-check
// An account: what the service holds under one of the app's accounts (balance, grants, runs,
// records, notifications), kept fresh with the rest of the page once asked for.
import { api } from './api-client.js';
import { $, buttonCell, cell, tableBody } from './dom.js';
import { showDetail } from './events-view.js';
import { describeFields, money } from './format.js';
import { notificationTable } from './notifications-view.js';
import { refresh } from './refresh.js';

/**
 * @import { BusinessRecord } from './format.js'
 * @import { NotificationView } from './notifications-view.js'
 * @typedef {{ for: string, id: string, credits: number, taken_back: number, amount: number, currency: string, granted_at: string, event_id: string,
 *   fields: BusinessRecord['fields'] }} AccountGrant
 * @typedef {{ run_id: string, quantity: number, created_at: string, reversed_at: string | null }} AccountRun
 * @typedef {{ account_id: string, balance: { granted: number, used: number, remaining: number }, grants: AccountGrant[], runs: AccountRun[],
 *   records: BusinessRecord[], notifications: NotificationView[] }} AccountView
 */

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
export async function showAccount(accountId) {
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
  const grants = tableBody(
    $('account-grants'),
    ['for', 'credits', 'taken back', 'paid', 'granted', 'event', 'details'],
    view.grants.length,
    'No credits granted.',
  );
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
    showEvent: showDetail,
    withSequence: true,
    afterReplay: refresh,
  });
  $('account').hidden = false;
}

/** Draws the account shown again, when one is. */
export async function refreshAccount() {
  if (shownAccount !== undefined) await showAccount(shownAccount);
}
