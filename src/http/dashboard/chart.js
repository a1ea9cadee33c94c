// @ts-check
// Events received, finished and failed per minute, as three lines.
import { $ } from './dom.js';

/**
 * @typedef {{ minute: string, received: number, finished: number, failed: number }} MinuteCounts
 */

/** @param {MinuteCounts[]} points */
export function drawChart(points) {
  const svg = $('chart');
  svg.replaceChildren();
  const max = Math.max(1, ...points.flatMap((p) => [p.received, p.finished, p.failed]));
  /** @param {number} i */
  const x = (i) => (points.length < 2 ? 0 : (i / (points.length - 1)) * 720);
  /** @param {number} v */
  const y = (v) => 155 - (v / max) * 145;
  /** @type {Array<['received' | 'finished' | 'failed', string]>} */
  const series = [
    ['received', '#2f6fde'],
    ['finished', '#27ae60'],
    ['failed', '#c0392b'],
  ];
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
