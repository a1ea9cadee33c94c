// @ts-check
// The catalog: the packages and plans the app sells, each taken off sale or put back, and the
// form that adds one.
import { api } from './api-client.js';
import { $, buttonCell, cell, tableBody } from './dom.js';
import { money } from './format.js';
import { refresh } from './refresh.js';

/**
 * @typedef {{ id: string, name: string, amount: number, currency: string, credits: number, active: boolean, stripe_price_id: string | null,
 *   features: string[], interval?: string, interval_count?: number }} CatalogItem
 */

/**
 * The packages and plans, each with a button that takes it off sale or puts it back.
 * @param {CatalogItem[]} packages
 * @param {CatalogItem[]} plans
 */
export function catalogTable(packages, plans) {
  const items = [...packages.map((item) => ({ kind: 'packages', item })), ...plans.map((item) => ({ kind: 'plans', item }))];
  const body = tableBody(
    $('catalog'),
    ['kind', 'id', 'name', 'price', 'credits', 'every', 'Stripe Price', 'features', 'status', ''],
    items.length,
    'Nothing in the catalog.',
  );
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
    cell(row, item.features.join(', '));
    cell(row, item.active ? 'on sale' : 'archived', 'status');
    buttonCell(row, item.active ? 'archive' : 'restore', item.active ? 'Archive' : 'Put back on sale', async () => {
      await api('PATCH', '/' + kind + '/' + encodeURIComponent(item.id), { active: !item.active });
      await refresh();
    });
  }
}

/** Shows the add form's fields of the kind chosen only (a plan's period is not a package's); a hidden field is disabled, so it is never required. */
export function showCatalogFields() {
  const kind = /** @type {HTMLSelectElement} */ ($('catalog-kind')).value;
  for (const field of /** @type {NodeListOf<HTMLInputElement | HTMLSelectElement>} */ (document.querySelectorAll('#catalog-add [data-kind]'))) {
    field.hidden = field.dataset.kind !== kind;
    field.disabled = field.hidden;
  }
}

/**
 * The add form's fields as the admin API takes them; a plan's period and meter only for a plan.
 * Credits may be 0 in the form: the API allows it for a usage-billed plan only, and says so.
 */
export function catalogInput() {
  /** @param {string} id */
  const value = (id) => /** @type {HTMLInputElement} */ ($(id)).value.trim();
  const plan = value('catalog-kind') === 'plans';
  return {
    id: value('catalog-id'),
    name: value('catalog-name'),
    amount: Number(value('catalog-amount')),
    currency: value('catalog-currency'),
    credits: Number(value('catalog-credits')),
    ...(value('catalog-price') && { stripe_price_id: value('catalog-price') }),
    ...(value('catalog-features') && {
      features: value('catalog-features')
        .split(',')
        .map((key) => key.trim())
        .filter(Boolean),
    }),
    ...(plan && { interval: value('catalog-interval'), interval_count: Number(value('catalog-interval-count')) }),
    ...(plan && value('catalog-meter') && { meter_event_name: value('catalog-meter') }),
  };
}
