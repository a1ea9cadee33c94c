// @ts-check
// The page's building blocks: its elements by id, table cells and rows, and the buttons whose
// actions show a refusal on the page. Every value is written as textContent, never as HTML: the
// values come from Stripe payloads and the database.

/**
 * The element with this id, which the page must have.
 * @template {HTMLElement | SVGElement} [T=HTMLElement]
 * @param {string} id
 * @returns {T}
 */
export function $(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`#${id} is missing from the page`);
  return /** @type {T} */ (/** @type {unknown} */ (element));
}

/**
 * Runs what a button or form asked for; a refusal is shown on the page instead of lost in the console.
 * @param {() => Promise<void>} action
 */
export async function act(action) {
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
export function cell(row, text, className) {
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
export function buttonCell(row, className, text, action) {
  const button = cell(row, '').appendChild(document.createElement('button'));
  button.type = 'button';
  button.className = className;
  button.textContent = text;
  button.addEventListener(
    'click',
    () =>
      void act(async () => {
        button.disabled = true;
        try {
          await action();
        } finally {
          button.disabled = false;
        }
      }),
  );
}

/**
 * Empties the table and gives it these headings; the body it returns says `emptyText` when there are no rows.
 * @param {HTMLTableElement} table
 * @param {string[]} headings
 * @param {number} rows
 * @param {string} emptyText
 */
export function tableBody(table, headings, rows, emptyText) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of headings) head.appendChild(document.createElement('th')).textContent = h;
  const body = table.createTBody();
  if (rows === 0) cell(body.insertRow(), emptyText, 'empty').colSpan = headings.length;
  return body;
}
