// @ts-check
// After a change (a replay, a sweep, a catalog edit) a view draws the whole page again, which
// app.js draws from every view. The views reach that here, bound once by app.js at start, rather
// than by importing app.js: that would be an import cycle.

/** @type {() => Promise<void>} */
let drawPage = async () => {};

/**
 * What refresh() runs: app.js's drawing of the page.
 * @param {() => Promise<void>} draw
 */
export function refreshWith(draw) {
  drawPage = draw;
}

/** Reads /admin/api again and draws the whole page. */
export const refresh = () => drawPage();
